/**
 * Leases (in-flight counts) in the per-pool Durable Object, driven through the real
 * Worker against fake model servers: every way a request can end must release its lease,
 * a lost release must heal by itself, and the load-aware policies must actually use the
 * counts (power of two and least-loaded against a skewed fleet).
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigSource } from "../../src/kv/config-source";
import type { PoolSnapshot } from "../../src/state/types";
import type { FakeBehaviour, FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, chat, publish, routerFetch } from "../support/router";
import { frozenClock, metricsText, metricValue, poolStub, statefulConfig } from "../support/state";

let time: ReturnType<typeof frozenClock> | undefined;
afterEach(() => {
  time?.restore();
  time = undefined;
});

const spawned: FleetServer[] = [];
afterEach(async () => {
  await Promise.all(spawned.splice(0).map((s) => s.close()));
});
async function servers(behaviours: FakeBehaviour[], prefix: string): Promise<FleetServer[]> {
  const list = await Promise.all(behaviours.map((b, i) => spawnServer(b, `${prefix}${i}`)));
  spawned.push(...list);
  return list;
}

/** Circuits that never open here: these tests are about leases, not about breakers. */
const LENIENT_CIRCUIT = "circuit: { consecutive_failures: 1000000, min_requests: 1000000 }";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const inflightOf = (snap: PoolSnapshot) => snap.replicas.map((r) => r.inflight);
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const counterTotal = (samples: PoolSnapshot["requests"], labels: Record<string, string> = {}) =>
  sum(samples.filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v)).map((s) => s.value));

/**
 * Polls the pool's object until no lease is held or `timeoutMs` passes; returns the last
 * snapshot either way. Releases are sent from `ctx.waitUntil` after the response, so they
 * trail the client by a little.
 */
async function settledSnapshot(pool: string, timeoutMs = 5_000): Promise<PoolSnapshot> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const snap = await poolStub(pool).snapshot();
    if (sum(inflightOf(snap)) === 0 || Date.now() >= until) return snap;
    await sleep(20);
  }
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
        { failRate: 0.2, failStatus: 500, streamChunks: 8, chunkIntervalMs: 2 },
        { failRate: 0.2, failStatus: 503, streamChunks: 8, chunkIntervalMs: 2 },
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
    const tally = { cancelled: 0, aborted: 0, streamsComplete: 0, streamsBroken: new Map<string, number>(), plainOk: 0 };
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
      if (kind === "cancel") {
        const first = await reader.read();
        expect(first.done).toBe(false);
        await reader.cancel();
        tally.cancelled++;
        return;
      }
      try {
        for (;;) if ((await reader.read()).done) break;
        tally.streamsComplete++;
      } catch {
        const replica = res.headers.get("x-switchyard-replica") ?? "?";
        tally.streamsBroken.set(replica, (tally.streamsBroken.get(replica) ?? 0) + 1);
      }
    });

    const waitStart = Date.now();
    const snap = await settledSnapshot(config.pool);
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
  // 60 s). The session now also reports from request.signal (src/state/session.ts).
  it("releases the lease of a client that leaves before response headers", async () => {
    const [slow] = await servers([{ latencyMs: 500 }], "early-");
    const config = statefulConfig({ replicas: [{ id: "slow", url: slow!.url }], routing: "{ affinity: { enabled: false } }", poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const stub = poolStub(config.pool);
    // The client leaves at different points of the 500 ms wait for headers.
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
    const snap = await stub.snapshot();
    expect(counterTotal(snap.requests)).toBe(3);
    expect(counterTotal(snap.requests, { status: "499" })).toBe(3);
    expect(counterTotal(snap.attempts, { verdict: "failure" })).toBe(0); // the client leaving says nothing about the replica
  });
});

describe("a lost release heals by itself", () => {
  it("a lease never finished expires after its TTL (swept at most once a second)", async () => {
    const [a, b] = await servers([{}, {}], "ttl-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }, { id: "b", url: b!.url }], poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const spec = await specOf(config.pool);
    const stub = poolStub(config.pool);
    time = frozenClock();

    const lost = await stub.acquire({ spec, pinned: null, forced: null, leaseTtlMs: 5_000 });
    expect(lost.leaseId).not.toBeNull();
    const holder = lost.order[0]!;
    const inflightOfHolder = async () => (await stub.snapshot()).replicas.find((r) => r.id === holder)!.inflight;
    expect(await inflightOfHolder()).toBe(1);

    time.advance(4_999); // still inside the TTL
    expect(await inflightOfHolder()).toBe(1);
    time.advance(2); // past the TTL; the last sweep (at 4,999) was under a second ago, so none is due yet
    expect(await inflightOfHolder()).toBe(1);
    time.advance(1_000); // the next sweep is due
    expect(await inflightOfHolder()).toBe(0);
  });

  it("a late finish for a swept lease does not release another request's lease", async () => {
    const [a] = await servers([{}], "late-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }], poolExtra: LENIENT_CIRCUIT });
    await publish(config.yaml);
    const spec = await specOf(config.pool);
    const stub = poolStub(config.pool);
    time = frozenClock();

    const lost = await stub.acquire({ spec, pinned: null, forced: null, leaseTtlMs: 1_000 });
    time.advance(2_000); // expired; this acquire sweeps it and takes its own lease
    const live = await stub.acquire({ spec, pinned: null, forced: null, leaseTtlMs: 60_000 });
    expect(inflightOf(await stub.snapshot())).toEqual([1]);

    const finish = (leaseId: string | null) => stub.finish({ leaseId, model: config.model, attempts: [{ replica: "a", verdict: "success", status: 200 }], status: 200, probe: false });
    await finish(lost.leaseId); // arrives after its lease was swept
    expect(inflightOf(await stub.snapshot())).toEqual([1]);
    await finish(live.leaseId);
    await finish(live.leaseId); // a duplicate release is a no-op, never negative
    expect(inflightOf(await stub.snapshot())).toEqual([0]);
  });

  it("the Worker's lease outlives the request deadline by 60 s: never swept while the request may run", async () => {
    const [slow] = await servers([{ latencyMs: 1_000 }], "heal-");
    const deadlineMs = 10_000;
    const config = statefulConfig({
      replicas: [{ id: "slow", url: slow!.url }],
      routing: `{ affinity: { enabled: false }, deadline_ms: ${deadlineMs}, try_timeout_ms: ${deadlineMs} }`,
      poolExtra: LENIENT_CIRCUIT,
    });
    await publish(config.yaml);
    const stub = poolStub(config.pool);
    time = frozenClock();

    const pending = chat(config.model);
    await expect.poll(async () => sum(inflightOf(await stub.snapshot())), { timeout: 2_000, interval: 10 }).toBe(1);
    time.advance(deadlineMs + 59_000);
    expect(inflightOf(await stub.snapshot())).toEqual([1]);
    time.advance(2_000); // past deadline_ms + 60 s, and a sweep is due: the lease counts as lost
    expect(inflightOf(await stub.snapshot())).toEqual([0]);

    const res = await pending; // the request was alive all along (the object's clock ran ahead)
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await expect.poll(async () => counterTotal((await stub.snapshot()).requests), { timeout: 2_000, interval: 10 }).toBe(1);
    expect(inflightOf(await stub.snapshot())).toEqual([0]); // its late release freed nothing twice
  });
});

describe("load-aware policies use the leases", () => {
  /**
   * Closed loop: `clients` callers, each sending `perClient` plain requests back to back.
   * Meanwhile the pool's in-flight counts are sampled every ~10 ms; each sample scores
   * max(in-flight) / mean(in-flight) across replicas (1 = perfectly even). Only samples
   * under load count (total in-flight >= clients / 2): in the ramp-up and the tail a
   * single request in flight scores 8 whatever the policy, and those samples would
   * swamp the comparison with noise.
   */
  async function imbalanceUnderLoad(model: string, pool: string, clients: number, perClient: number) {
    let done = false;
    const ratios: number[] = [];
    const perReplica: number[] = [];
    const served = new Map<string, number>();
    const sampler = (async () => {
      while (!done) {
        const counts = inflightOf(await poolStub(pool).snapshot());
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

  // Observed locally, 20+ runs (24 clients × 30 requests each, 4 fast 5 ms + 4 slow 80 ms,
  // also with the whole workers suite running alongside): random (weighted, equal weights)
  // scores 2.23-2.64, power of two 1.47-1.61; p2c / random = 0.61-0.70. Time-averaged
  // in-flight per replica, fast vs slow: random ≈ 1.1 vs 4.6, p2c ≈ 2.3 vs 3.4. The Worker
  // and object round trips add ~50 ms per request in workerd, which dilutes the 16× skew.
  // Before samples were limited to loaded ones (ramp-up and tail included), p2c / random
  // ranged 0.68-1.01: that metric was too noisy to assert on.
  it("power of two keeps in-flight measurably more even than random over a skewed fleet", async () => {
    const fast = Array.from({ length: 4 }, (): FakeBehaviour => ({ latencyMs: 5 }));
    const slow = Array.from({ length: 4 }, (): FakeBehaviour => ({ latencyMs: 80 }));
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

    const random = await imbalanceUnderLoad("random", randomPool, 24, 30);
    const p2c = await imbalanceUnderLoad("p2c", p2cPool, 24, 30);
    const report = JSON.stringify({ random, p2c });
    console.log(`leases: imbalance ${report}`);
    expect(random.samples, report).toBeGreaterThan(20);
    expect(p2c.samples, report).toBeGreaterThan(20);
    expect(p2c.ratio, report).toBeLessThanOrEqual(0.8 * random.ratio);
    for (const p of [randomPool, p2cPool]) expect(inflightOf(await settledSnapshot(p))).toEqual(Array(8).fill(0));
  }, 60_000);

  it("least_loaded steers new requests away from a replica held busy", async () => {
    const [busy, idle1, idle2] = await servers([{ latencyMs: 3_000 }, {}, {}], "ll-");
    const config = statefulConfig({
      replicas: [{ id: "busy", url: busy!.url }, { id: "idle1", url: idle1!.url }, { id: "idle2", url: idle2!.url }],
      poolExtra: `policy: least_loaded\n    ${LENIENT_CIRCUIT}`,
      routing: "{ affinity: { enabled: false } }",
    });
    await publish(config.yaml);
    const stub = poolStub(config.pool);
    const busyInflight = async () => (await stub.snapshot()).replicas.find((r) => r.id === "busy")!.inflight;

    // Two requests forced onto "busy" (operator override) hold two leases there for 3 s.
    const held = Array.from({ length: 2 }, () => chat(config.model, {}, { "x-route-pin": "busy", "x-switchyard-admin-token": ADMIN_TOKEN }));
    await expect.poll(busyInflight, { timeout: 2_000, interval: 10 }).toBe(2);

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

    for (const res of await Promise.all(held)) {
      expect(res.headers.get("x-switchyard-replica")).toBe("busy");
      await res.arrayBuffer();
    }
    expect(inflightOf(await settledSnapshot(config.pool))).toEqual([0, 0, 0]);
  }, 20_000);
});
