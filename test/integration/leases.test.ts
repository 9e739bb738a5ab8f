/**
 * Leases (in-flight counts) in the per-pool Durable Object, driven through the real
 * Worker against fake model servers: every way a request can end must release its lease,
 * a lost release must heal by itself, and the load-aware policies must actually use the
 * counts (power of two and least-loaded against a skewed fleet).
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { evictDurableObject } from "cloudflare:test";
import { ConfigSource } from "../../src/platform/config-source";
import { ISOLATE_REPORT_TTL_MS } from "../../src/platform/objects/pool-state";
import { HEARTBEAT_MS } from "../../src/app/state/pool-agent";
import type { PoolSnapshot, PoolSpec, PoolSyncRequest } from "../../src/core/pool/wire";
import type { FakeBehaviour, FleetServer } from "../support/fleet";
import { chatRequests, serversClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, chat, publish, routerFetch } from "../support/router";
import { frozenClock, metricsText, metricValue, poolAfter, poolStub, poolWhen, statefulConfig } from "../support/state";
import { readWithin, WaitTimeout, within } from "../support/timing";

let time: ReturnType<typeof frozenClock> | undefined;
afterEach(() => {
  time?.restore();
  time = undefined;
});

const servers = serversClosedAfterEach();

/** Circuits that never open here: these tests are about leases, not about breakers. */
const LENIENT_CIRCUIT = "circuit: { consecutive_failures: 1000000, min_requests: 1000000 }";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Bound on any one read of a response body: every request here ends by its 1 s deadline, so only a hang takes this long. */
const READ_BOUND_MS = 15_000;
const inflightOf = (snap: PoolSnapshot) => snap.replicas.map((r) => r.inflight);
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const counterTotal = (samples: PoolSnapshot["requests"], labels: Record<string, string> = {}) =>
  sum(samples.filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v)).map((s) => s.value));

/**
 * Polls the pool's object until no request is in flight (and, given `requests`, that many
 * have been counted) or `timeoutMs` passes; returns the last snapshot either way. Reports
 * go out in batches after the response (this isolate's are flushed on each poll), so
 * they trail the client by a little.
 */
async function settledSnapshot(pool: string, timeoutMs = 5_000, requests = 0): Promise<PoolSnapshot> {
  return poolWhen(pool, (snap) => sum(inflightOf(snap)) === 0 && counterTotal(snap.requests) >= requests, timeoutMs);
}

/** `total` jobs, at most `concurrency` at once (a sliding window, so one slow job does not stall a batch). */
async function runWindowed(total: number, concurrency: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await job(next++);
    }),
  );
}

/** Spec of `pool` in the live config, as the Worker would send it to the object. */
async function specOf(pool: string) {
  const snapshot = (await new ConfigSource().get(env)).current!;
  const spec = snapshot.poolSpecs.get(pool);
  if (!spec) throw new Error(`pool ${pool} not in the live config`);
  return spec;
}

describe("no lease leaks", () => {
  type Kind = "cancel" | "abort" | "stream" | "plain";
  // i % 10: 0-1 cancel mid-stream, 2 abort on a 5-24 ms timer (before headers, or while
  // the body flows, or after it ended: whichever comes), 3-5 read a stream to its end,
  // 6-9 plain JSON.
  const kindOf = (i: number): Kind => (i % 10 < 2 ? "cancel" : i % 10 < 3 ? "abort" : i % 10 < 6 ? "stream" : "plain");

  const variants = [
    { name: "affinity off, power_of_two", routing: "affinity: { enabled: false }", policy: "power_of_two", total: 2000 },
    { name: "affinity on, weighted", routing: "affinity: { enabled: true, ttl_s: 300 }", policy: "weighted", total: 1000 },
  ];

  it.each(variants)("$total requests that end every which way leave in-flight at 0 ($name)", async ({ name, routing, policy, total }) => {
    const ids = ["f500", "f503", "cut", "cutfail", "slow", "deadline"] as const;
    const fleet = await servers(
      [
        // Half of f500's and f503's answers fail, so requests whose both tries fail (a 5xx to
        // the client) are common enough to count on: with 0.2 the affinity run of 1,000 saw
        // 0 to ~5 of them (CI once saw 0); with 0.5, six runs saw 9 to 23, so a run with none
        // is below 1e-4 if they are even roughly Poisson.
        { failRate: 0.5, failStatus: 500, streamChunks: 8, chunkIntervalMs: 2 },
        { failRate: 0.5, failStatus: 503, streamChunks: 8, chunkIntervalMs: 2 },
        { streamChunks: 8, streamCutAfter: 2, chunkIntervalMs: 1 }, // every stream breaks after 2 chunks
        { failRate: 0.2, failStatus: 500, streamChunks: 8, streamCutAfter: 5, latencyMs: 3 },
        { latencyMs: 20, streamChunks: 8, chunkIntervalMs: 10 },
        { streamChunks: 40, chunkIntervalMs: 50 }, // a 2 s stream against a 1 s deadline
      ],
      "leak-",
    );
    const config = statefulConfig({
      model: `leak-${crypto.randomUUID().slice(0, 8)}`,
      replicas: fleet.map((s, i) => ({ id: ids[i]!, url: s.url, weight: ids[i] === "deadline" ? 0.5 : 1 })),
      poolExtra: `policy: ${policy}\n    ${LENIENT_CIRCUIT}`,
      // Two attempts, so a request whose both tries fail reaches the client as a 5xx.
      routing: `{ ${routing}, max_attempts: 2, deadline_ms: 1000, try_timeout_ms: 1000 }`,
    });
    await publish(config.yaml);

    const statuses = new Map<number, number>();
    const tally = { cancelled: 0, endedBeforeFirstChunk: 0, aborted: 0, streamsComplete: 0, streamsBroken: new Map<string, number>(), plainOk: 0 };
    await runWindowed(total, 50, async (i) => {
      const kind = kindOf(i);
      const authorization = `Bearer user-${i % 64}`;
      if (kind === "abort") {
        const body = JSON.stringify({ model: config.model, messages: [{ role: "user", content: "hi" }], stream: true });
        const signal = AbortSignal.timeout(5 + (i % 20));
        try {
          const res = await routerFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization }, body, signal });
          await res.arrayBuffer();
        } catch {
          tally.aborted++;
        }
        return;
      }
      const res = await chat(config.model, kind === "plain" ? {} : { stream: true }, { authorization });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status !== 200) {
        await res.arrayBuffer();
        return;
      }
      if (kind === "plain") {
        expect(((await res.json()) as { object: string }).object).toBe("chat.completion");
        tally.plainOk++;
        return;
      }
      const reader = res.body!.getReader();
      const replica = res.headers.get("x-switchyard-replica") ?? "?";
      const broken = () => tally.streamsBroken.set(replica, (tally.streamsBroken.get(replica) ?? 0) + 1);
      // Every read is bounded (a hang fails with a message naming the request), but a
      // stream's own error is an outcome: on a loaded machine the 1 s deadline can end a
      // stream even before its first chunk, which is one more way for a request to end.
      if (kind === "cancel") {
        let first: ReadableStreamReadResult<Uint8Array>;
        try {
          first = await readWithin(reader, READ_BOUND_MS, `request ${i}: first chunk from ${replica}`);
        } catch (error) {
          if (error instanceof WaitTimeout) throw error;
          broken();
          tally.endedBeforeFirstChunk++;
          return;
        }
        if (first.done) {
          tally.endedBeforeFirstChunk++;
          return;
        }
        await reader.cancel();
        tally.cancelled++;
        return;
      }
      try {
        for (;;) if ((await readWithin(reader, READ_BOUND_MS, `request ${i}: stream from ${replica}`)).done) break;
        tally.streamsComplete++;
      } catch (error) {
        if (error instanceof WaitTimeout) throw error;
        broken();
      }
    });

    const waitStart = Date.now();
    const snap = await settledSnapshot(config.pool, 5_000, total);
    const summary = { statuses: [...statuses], ...tally, streamsBroken: [...tally.streamsBroken], settledAfterMs: Date.now() - waitStart };
    console.log(`leases: leak run (${name}) ${JSON.stringify(summary)} attempts ${JSON.stringify(snap.attempts)}`);
    const report = JSON.stringify({ ...summary, snap });
    expect(inflightOf(snap), report).toEqual(ids.map(() => 0));
    expect(snap.replicas.every((r) => r.circuit === "closed"), report).toBe(true);
    // Every request reported its outcome exactly once: no lost release, no double release.
    expect(counterTotal(snap.requests), report).toBe(total);

    const text = await metricsText();
    for (const id of ids) expect(text).toMatch(new RegExp(`^switchyard_inflight\\{pool="${config.pool}",replica="${id}"\\} 0$`, "m"));
    expect(metricValue(text, "switchyard_inflight", { pool: config.pool })).toBe(0);

    // The run did exercise each way of ending, or the zeros above would prove nothing.
    const stats = await Promise.all(fleet.map((s) => s.stats()));
    expect(sum(stats.map((s) => s.aborted)), report).toBeGreaterThan(0); // client cancels reached the upstream
    expect(tally.cancelled, report).toBeGreaterThan(total * 0.15);
    expect(tally.aborted, report).toBeGreaterThan(0);
    expect(counterTotal(snap.requests, { status: "499" }), report).toBeGreaterThan(0); // reported as the client leaving
    expect(tally.streamsBroken.get("cut") ?? 0, report).toBeGreaterThan(0); // upstream cut mid-stream
    expect(tally.streamsBroken.get("deadline") ?? 0, report).toBeGreaterThan(0); // request deadline cut the body
    expect(tally.streamsComplete + tally.plainOk, report).toBeGreaterThan(total * 0.3);
    expect(counterTotal(snap.attempts, { verdict: "failure" }), report).toBeGreaterThan(0);
    expect(counterTotal(snap.fallbacks), report).toBeGreaterThan(0); // leases moved to the fallback replica
    expect([...statuses].filter(([s]) => s >= 500).length, report).toBeGreaterThan(0); // both tries failed
    expect(counterTotal(snap.requests, { status: "500" }) + counterTotal(snap.requests, { status: "502" }) + counterTotal(snap.requests, { status: "503" }), report).toBeGreaterThan(0);
  }, 60_000);

  // Regression: a client that left before response headers cancelled the handler
  // mid-await, `settle` never ran and the lease was held until its TTL (deadline_ms +
  // 60 s). The session now also reports from request.signal (src/app/model-call/pool-session.ts).
  it("releases the lease of a client that leaves before response headers", async () => {
    const [slow] = await servers([{ latencyMs: 2_000 }], "early-");
    const config = statefulConfig({ replicas: [{ id: "slow", url: slow!.url }], routing: "{ affinity: { enabled: false } }", poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const stub = poolStub(config.pool);
    // The client leaves at different points of the 2 s wait for headers (after the pool's
    // object has seen the request's load, which arrives with the next batch).
    for (const waitMs of [0, 50, 200]) {
      const gone = new AbortController();
      const pending = routerFetch("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: config.model, messages: [] }),
        signal: gone.signal,
      });
      await expect.poll(async () => sum(inflightOf(await stub.snapshot())), { timeout: 2_000, interval: 5 }).toBe(1);
      await sleep(waitMs);
      gone.abort();
      await expect(pending).rejects.toThrow();
      expect(inflightOf(await settledSnapshot(config.pool, 2_000)), `client left after ${waitMs} ms`).toEqual([0]);
    }
    // Upstream requests that had started were cancelled too, none ran to its end.
    await expect.poll(async () => (await slow!.stats()).inFlight, { timeout: 2_000 }).toBe(0);
    const upstream = await slow!.stats();
    expect(upstream.completed).toBe(0);
    expect(upstream.aborted).toBe(upstream.byPath["/v1/chat/completions"] ?? 0);
    const snap = await poolAfter(config.pool, 3);
    expect(counterTotal(snap.requests)).toBe(3);
    expect(counterTotal(snap.requests, { status: "499" })).toBe(3);
    expect(counterTotal(snap.attempts, { verdict: "failure" })).toBe(0); // the client leaving says nothing about the replica
  });
});

describe("a client that leaves before the answer, seen from request.signal alone", () => {
  // A handler cancelled mid-await runs no continuation, so the report cannot wait for the
  // fetch to fail: the attempt engine settles the plan (and with it the session: lease
  // released, 499 and a neutral verdict reported) from the abort event itself. Here the
  // upstream never answers, and the checks run synchronously after the abort: nothing but
  // the listener can have released the load.
  it("releases the load at once and reports 499 with a neutral verdict", async () => {
    const { callPool } = await import("../../src/app/model-call/pool");
    const { IsolateState } = await import("../../src/app/state/isolate-state");
    const { cryptoRandom } = await import("../../src/lib/random");
    const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
    const [a] = await servers([{ hang: true }], "guard-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }], routing: "{ affinity: { enabled: false } }", poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const snapshot = (await new ConfigSource().get(env)).current!;
    const route = snapshot.routes.get(config.model)!;
    const state = new IsolateState();
    const ctx = createExecutionContext();
    const client = new AbortController();
    const request = new Request("https://router.test/v1/chat/completions", { method: "POST", signal: client.signal });
    const headers = new Headers({ "content-type": "application/json" });
    const outcome = callPool({ env, ctx, random: cryptoRandom(), state, snapshot, route, request, bearer: undefined, forced: null, affinity: false, apiPath: "/v1/chat/completions", body: '{"model":"m","messages":[]}', headers, startedAt: Date.now() });
    const agent = state.pool(env, snapshot.poolSpecs.get(config.pool)!);
    await expect.poll(() => agent.localInflight.get("a"), { timeout: 5_000, interval: 5 }).toBe(1);

    client.abort();
    expect(agent.localInflight.get("a")).toBeUndefined(); // released at once, before any continuation ran
    const result = await outcome;
    expect(result.ok ? 200 : result.status).toBe(499);
    await state.flush();
    await waitOnExecutionContext(ctx); // the waitUntil the engine held open has been let go
    const snap = await poolStub(config.pool).snapshot();
    expect(counterTotal(snap.requests, { status: "499" })).toBe(1);
    expect(counterTotal(snap.attempts, { verdict: "neutral" })).toBe(1);
    state.dispose();
  });
});

describe("in-flight reports heal by themselves", () => {
  const spec = async (pool: string) => specOf(pool);
  const report = (isolate: string, seq: number, inflight: Record<string, number>, s: PoolSpec, batches: PoolSyncRequest["batches"] = []): PoolSyncRequest => ({ isolate, seq, spec: s, inflight, batches, prefixCursor: 0 });
  const inflightOfA = async (pool: string) => (await poolStub(pool).snapshot()).replicas.find((r) => r.id === "a")!.inflight;

  it("an isolate that stops reporting has its in-flight expire after ISOLATE_REPORT_TTL_MS; a live one keeps its own", async () => {
    const [a] = await servers([{}], "ttl-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }], poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const s = await spec(config.pool);
    const stub = poolStub(config.pool);
    time = frozenClock();

    await stub.sync(report("gone", 1, { a: 3 }, s));
    await stub.sync(report("alive", 1, { a: 1 }, s));
    expect(await inflightOfA(config.pool)).toBe(4);
    time.advance(ISOLATE_REPORT_TTL_MS - 1_000);
    await stub.sync(report("alive", 2, { a: 1 }, s)); // "alive" reports again; "gone" stays silent
    time.advance(999); // 1 ms before "gone" expires
    expect(await inflightOfA(config.pool)).toBe(4);
    time.advance(1_001); // past it, and a sweep is due
    expect(await inflightOfA(config.pool)).toBe(1);
    expect((await stub.snapshot()).isolates).toBe(1);
  });

  it("ignores an in-flight report overtaken by a newer one from the same isolate", async () => {
    const [a] = await servers([{}], "seq-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }], poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const s = await spec(config.pool);
    const stub = poolStub(config.pool);
    await stub.sync(report("i", 2, { a: 1 }, s));
    await stub.sync(report("i", 1, { a: 5 }, s)); // sent earlier, arrived later
    expect(await inflightOfA(config.pool)).toBe(1);
  });

  it("applies a batch once even when it is delivered twice (a lost answer, resent)", async () => {
    const [a] = await servers([{}], "dup-");
    const config = statefulConfig({ model: "dup", replicas: [{ id: "a", url: a!.url }], poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const s = await spec(config.pool);
    const stub = poolStub(config.pool);
    const batch = {
      seq: 1,
      outcomes: [{ replica: "a", verdict: "failure" as const, at: Date.now(), probe: null }],
      requests: [{ labels: { model: "dup", replica: "a", status: "502" }, value: 2 }],
      attempts: [{ labels: { replica: "a", verdict: "failure" }, value: 2 }],
      fallbacks: [],
      prefix: [],
    };
    const first = await stub.sync(report("i", 2, {}, s, [batch]));
    const second = await stub.sync(report("i", 3, {}, s, [batch]));
    expect([first.acked, second.acked]).toEqual([1, 1]);
    const snap = await stub.snapshot();
    expect(counterTotal(snap.requests)).toBe(2);
    expect(second.replicas[0]!.circuit.consecutiveFailures).toBe(1);
    // The failure changed the stored circuit, so the applied seq was stored with it: a restart does not apply it again.
    await evictDurableObject(stub);
    const third = await stub.sync(report("i", 4, {}, s, [batch]));
    expect(third.acked).toBe(1);
    expect(third.replicas[0]!.circuit.consecutiveFailures).toBe(1);
  });

  it("tells each isolate the load of the others, not its own", async () => {
    const [a] = await servers([{}], "others-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }], poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const s = await spec(config.pool);
    const stub = poolStub(config.pool);
    await stub.sync(report("x", 1, { a: 2 }, s));
    const y = await stub.sync(report("y", 1, { a: 3 }, s));
    const x = await stub.sync(report("x", 2, { a: 2 }, s));
    expect([x.replicas[0]!.others, y.replicas[0]!.others]).toEqual([3, 2]);
    expect(await inflightOfA(config.pool)).toBe(5);
  });

  // The heartbeat is what keeps a long request's load counted: without it the first
  // report would expire at ISOLATE_REPORT_TTL_MS and the check below would read 0.
  //
  // No fixed sleep: the object's clock is moved past the first report's expiry at once,
  // and the test polls for a report that arrives after that while the request is still in
  // flight. Only a heartbeat can send one (there is no other traffic, and the request's
  // own report comes at its end with 0 in flight). The upstream holds the request for
  // UPSTREAM_MS, so the poll must see the heartbeat well before then.
  it("a request in flight keeps its isolate's report alive past the TTL (heartbeat)", async () => {
    const UPSTREAM_MS = 3 * HEARTBEAT_MS + 1_000;
    const [slow] = await servers([{ latencyMs: UPSTREAM_MS }], "beat-");
    const config = statefulConfig({
      replicas: [{ id: "a", url: slow!.url }],
      routing: "{ affinity: { enabled: false }, deadline_ms: 30000, try_timeout_ms: 30000 }",
      poolExtra: LENIENT_CIRCUIT,
    });
    await publish(config.yaml);
    time = frozenClock();
    const started = Date.now();
    const pending = chat(config.model);
    await expect.poll(() => inflightOfA(config.pool), { timeout: 2_000, interval: 20 }).toBe(1);
    time.advance(ISOLATE_REPORT_TTL_MS - 1);
    expect(await inflightOfA(config.pool)).toBe(1); // the first report, 1 ms before it expires
    // Past its expiry, and past the object's next sweep (it sweeps at most once a second
    // of its clock): the next read drops the first report, and only a later one can count
    // the request again.
    time.advance(ISOLATE_REPORT_TTL_MS / 2);
    await expect
      .poll(() => inflightOfA(config.pool), { timeout: 2 * HEARTBEAT_MS + 1_000, interval: 50, message: `no heartbeat within ${2 * HEARTBEAT_MS + 1_000} ms of the first report's expiry` })
      .toBe(1);
    expect(Date.now() - started, "the heartbeat must arrive while the request is in flight").toBeLessThan(UPSTREAM_MS);
    const res = await within(pending, UPSTREAM_MS + 10_000, "the slow request's response");
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await expect.poll(() => inflightOfA(config.pool), { timeout: 2_000, interval: 20 }).toBe(0);
  }, 30_000);
});

describe("load-aware policies use the leases", () => {
  /**
   * Closed loop: `clients` callers, each sending `perClient` plain requests back to back.
   * Meanwhile the replicas' own in-flight counts (what the fake servers are serving: the
   * ground truth, not the router's report of it) are sampled every ~10 ms; each sample scores
   * max(in-flight) / mean(in-flight) across replicas (1 = perfectly even). Only samples
   * under load count (total in-flight >= clients / 2): in the ramp-up and the tail a
   * single request in flight scores 8 whatever the policy, and those samples would
   * swamp the comparison with noise.
   */
  async function imbalanceUnderLoad(model: string, fleet: FleetServer[], clients: number, perClient: number) {
    let done = false;
    const ratios: number[] = [];
    const perReplica: number[] = [];
    const served = new Map<string, number>();
    const sampler = (async () => {
      while (!done) {
        const counts = (await Promise.all(fleet.map((s) => s.stats()))).map((s) => s.inFlight);
        const total = sum(counts);
        if (total >= clients / 2) {
          ratios.push(Math.max(...counts) / (total / counts.length));
          counts.forEach((c, i) => (perReplica[i] = (perReplica[i] ?? 0) + c));
        }
        await sleep(10);
      }
    })();
    const started = Date.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = 0; i < perClient; i++) {
          const res = await chat(model);
          expect(res.status).toBe(200);
          await res.arrayBuffer();
          const replica = res.headers.get("x-switchyard-replica")!;
          served.set(replica, (served.get(replica) ?? 0) + 1);
        }
      }),
    );
    const ms = Date.now() - started;
    done = true;
    await sampler;
    return {
      ratio: sum(ratios) / ratios.length,
      samples: ratios.length,
      ms,
      meanInflight: perReplica.map((n) => Math.round((n / ratios.length) * 10) / 10),
      served: Object.fromEntries([...served].sort()),
    };
  }

  // The router counts its own isolate's in-flight exactly, so in one isolate power of two
  // sees every lease at once. Measured at the replicas (3 runs, 24 clients × 30 requests,
  // 4 fast 5 ms + 4 slow 200 ms, other work on the machine): share of requests served by
  // the fast half, random 0.46-0.50, power of two 0.70-0.75; mean in-flight on a slow
  // replica random 4.2-5.8, p2c 3.2-3.8; max/mean in-flight random 2.8-3.0, p2c 2.1-2.3.
  //
  // The assertion is on the fast half's share: over 720 requests a policy that ignores
  // load (random) has share 0.5 with sd ≈ 0.019 and reaches 0.6 with p < 1e-6, while
  // power of two's observed 0.70+ sits over 5 sd above the bound (false failure < 1e-6).
  it("power of two keeps in-flight measurably more even than random over a skewed fleet", async () => {
    const fast = Array.from({ length: 4 }, (): FakeBehaviour => ({ latencyMs: 5 }));
    const slow = Array.from({ length: 4 }, (): FakeBehaviour => ({ latencyMs: 200 }));
    const fleet = await servers([...fast, ...slow], "skew-");
    const tag = crypto.randomUUID().slice(0, 8);
    const replicas = fleet.map((s, i) => `      - { id: ${i < 4 ? "fast" : "slow"}${i % 4}, url: "${s.url}" }`).join("\n");
    const pool = (name: string, policy: string) => `  ${name}:\n    policy: ${policy}\n    ${LENIENT_CIRCUIT}\n    replicas:\n${replicas}\n`;
    const [randomPool, p2cPool] = [`random-${tag}`, `p2c-${tag}`];
    await publish(
      `models:\n  random: { pool: ${randomPool} }\n  p2c: { pool: ${p2cPool} }\n` +
        `pools:\n${pool(randomPool, "weighted")}${pool(p2cPool, "power_of_two")}` +
        `routing: { affinity: { enabled: false } }\n`,
    );

    const random = await imbalanceUnderLoad("random", fleet, 24, 30);
    const p2c = await imbalanceUnderLoad("p2c", fleet, 24, 30);
    const report = JSON.stringify({ random, p2c });
    console.log(`leases: imbalance ${report}`);
    const fastShare = (r: typeof random) => sum(Object.entries(r.served).filter(([id]) => id.startsWith("fast")).map(([, n]) => n)) / (24 * 30);
    expect(fastShare(random), report).toBeLessThan(0.6); // the baseline is what it claims to be
    expect(fastShare(p2c), report).toBeGreaterThanOrEqual(0.6);
    expect(fastShare(p2c) - fastShare(random), report).toBeGreaterThanOrEqual(0.1);
    expect(p2c.ratio, report).toBeLessThan(random.ratio);
    for (const p of [randomPool, p2cPool]) expect(inflightOf(await settledSnapshot(p))).toEqual(Array(8).fill(0));
  }, 60_000);

  // "busy" never answers the two requests held there until their clients let go at the
  // end: the 30 requests in between can take as long as a loaded machine needs.
  it("least_loaded steers new requests away from a replica held busy", async () => {
    const [busy, idle1, idle2] = await servers([{ hang: true }, {}, {}], "ll-");
    const config = statefulConfig({
      replicas: [{ id: "busy", url: busy!.url }, { id: "idle1", url: idle1!.url }, { id: "idle2", url: idle2!.url }],
      poolExtra: `policy: least_loaded\n    ${LENIENT_CIRCUIT}`,
      routing: "{ affinity: { enabled: false } }",
    });
    await publish(config.yaml);
    const stub = poolStub(config.pool);
    const busyInflight = async () => (await stub.snapshot()).replicas.find((r) => r.id === "busy")!.inflight;

    // Two requests forced onto "busy" (operator override) hold two leases there until their clients leave.
    const clients = new AbortController();
    const forced = { "x-route-pin": "busy", "x-switchyard-admin-token": ADMIN_TOKEN };
    const held = Array.from({ length: 2 }, () =>
      routerFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", ...forced }, body: JSON.stringify({ model: config.model, messages: [] }), signal: clients.signal }),
    );
    await expect.poll(busyInflight, { timeout: 5_000, interval: 10 }).toBe(2);
    // The router counts a request in flight before its connection reaches "busy": wait for "busy" to hold both.
    await expect.poll(() => chatRequests(busy!), { timeout: 5_000, interval: 10 }).toBe(2);
    await busy!.setBehaviour({}); // the two keep hanging (a request keeps the behaviour it came in with); a pick of "busy" below would be answered, and counted

    const seen = new Map<string, number>();
    for (let i = 0; i < 30; i++) {
      const res = await chat(config.model);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const replica = res.headers.get("x-switchyard-replica")!;
      seen.set(replica, (seen.get(replica) ?? 0) + 1);
    }
    expect(await busyInflight()).toBe(2); // still held: the 30 ran while "busy" was loaded
    // Ignoring in-flight, 30 uniform picks would avoid one of three replicas with p = (2/3)^30 ≈ 5e-6.
    expect(seen.get("busy") ?? 0, JSON.stringify([...seen])).toBe(0);
    expect(seen.get("idle1") ?? 0).toBeGreaterThan(0);
    expect(seen.get("idle2") ?? 0).toBeGreaterThan(0);

    expect((await busy!.stats()).inFlight).toBe(2); // the two held requests are still held
    clients.abort();
    for (const res of held) await expect(res).rejects.toThrow();
    expect(inflightOf(await settledSnapshot(config.pool))).toEqual([0, 0, 0]);
  }, 30_000);
});
