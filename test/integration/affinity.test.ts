import { env } from "cloudflare:workers";
import { createExecutionContext, evictDurableObject, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sha256, toHex } from "../../src/lib/crypto";
import type { FleetServer } from "../support/fleet";
import { deadUrl, spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, chat, publish } from "../support/router";
import { affinityEvents, frozenClock, shardStubFor, statefulConfig } from "../support/state";
import { readToEnd } from "../support/timing";

let servers: FleetServer[];
beforeAll(async () => {
  servers = await Promise.all([spawnServer({}, "a"), spawnServer({}, "b"), spawnServer({}, "c")]);
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

let time: ReturnType<typeof frozenClock>;
afterEach(() => time?.restore());

const TTL_S = 60;
/** A fresh model on a fresh pool over the three servers, with a 60 s pin TTL. */
async function setup(extra: { weights?: number[]; routing?: string; poolExtra?: string } = {}) {
  const model = `m-${crypto.randomUUID().slice(0, 8)}`;
  const replicas = servers.map((s, i) => ({ id: ["a", "b", "c"][i]!, url: s.url, weight: extra.weights?.[i] ?? 1 }));
  const config = statefulConfig({ model, replicas, routing: extra.routing ?? `{ affinity: { ttl_s: ${TTL_S} } }`, poolExtra: extra.poolExtra });
  await publish(config.yaml);
  return { ...config, replicas };
}

const as = (user: string) => ({ authorization: `Bearer ${user}` });
async function servedBy(model: string, user: string, headers: Record<string, string> = {}) {
  const res = await chat(model, {}, { ...as(user), ...headers });
  await res.arrayBuffer();
  return { replica: res.headers.get("x-switchyard-replica"), status: res.status, attempts: res.headers.get("x-switchyard-attempts") };
}

describe("affinity shard batches", () => {
  it("counts a batch once when its answer was lost and it is sent again: hits once, the TTL slid once, drops harmless", async () => {
    time = frozenClock(1_800_000_000_000);
    const { key, stub } = await shardStubFor(`resend-${crypto.randomUUID()}`);
    const model = `m-${crypto.randomUUID().slice(0, 8)}`;
    const other = `m-${crypto.randomUUID().slice(0, 8)}`;
    await stub.claim({ key, model, pool: "p", ttlMs: 60_000, proposal: "a", allowed: ["a", "b"], drop: null });
    await stub.claim({ key, model: other, pool: "p", ttlMs: 60_000, proposal: "b", allowed: ["a", "b"], drop: null });
    time.advance(40_000); // past the slide granularity (30 s): a use rewrites the expiry
    const batch = { seq: 1, hits: { [model]: 3 }, touches: [{ key, model, usedAt: time.now, ttlMs: 60_000 }], drops: [{ key, model: other, replica: "b" }] };
    const first = await stub.sync({ isolate: "i", batches: [batch] }); // its answer is lost
    time.advance(10_000);
    const again = await stub.sync({ isolate: "i", batches: [batch] });
    expect([first.acked, again.acked]).toEqual([1, 1]);
    // A slide is idempotent anyway: the resent touch is answered with the expiry the first one set.
    expect(again.pins).toEqual([{ key, model, pin: { replica: "a", expiresAt: time.now - 10_000 + 60_000 } }]);
    const events = (await stub.snapshot()).events;
    const count = (event: string, m: string) => events.find((e) => e.labels.event === event && e.labels.model === m)?.value ?? 0;
    expect(count("hit", model)).toBe(3);
    expect(count("dropped_error", other)).toBe(1);
  });
});

describe("session affinity", () => {
  it("miss → weighted pick → pin created; later requests hit the same replica", async () => {
    const { model } = await setup();
    const first = await servedBy(model, "user-1");
    for (let i = 0; i < 10; i++) expect((await servedBy(model, "user-1")).replica).toBe(first.replica);
    expect(await affinityEvents(model)).toMatchObject({ miss: 1, created: 1, hit: 10, expired: 0 });
  });

  it("keeps one pin per (key, model): other users and other models get their own", async () => {
    const { model } = await setup();
    const users = Array.from({ length: 30 }, (_, i) => `user-${i}`);
    const pinned = new Map<string, string>();
    for (const user of users) pinned.set(user, (await servedBy(model, user)).replica!);
    for (const user of users) expect((await servedBy(model, user)).replica).toBe(pinned.get(user));
    expect(new Set(pinned.values()).size).toBeGreaterThan(1); // 30 weighted picks over 3 replicas: P(all alike) = 3^-29
    expect(await affinityEvents(model)).toMatchObject({ miss: 30, created: 30, hit: 30 });
  });

  it("keys anonymous clients by address", async () => {
    const { model } = await setup();
    const ip = (addr: string) => ({ "cf-connecting-ip": addr });
    const one = await chat(model, {}, ip("198.51.100.7"));
    for (let i = 0; i < 5; i++) expect((await chat(model, {}, ip("198.51.100.7"))).headers.get("x-switchyard-replica")).toBe(one.headers.get("x-switchyard-replica"));
    expect(await affinityEvents(model)).toMatchObject({ miss: 1, created: 1, hit: 5 });
  });

  it("slides the TTL on use, and the alarm sweeps pins idle past it (expired)", async () => {
    const { model } = await setup();
    time = frozenClock();
    const first = await servedBy(model, "slider");
    // Used every 40 s, the pin outlives its 60 s TTL several times over.
    for (let i = 0; i < 4; i++) {
      time.advance(40_000);
      expect((await servedBy(model, "slider")).replica).toBe(first.replica);
    }
    expect(await affinityEvents(model)).toMatchObject({ created: 1, hit: 4, expired: 0 });

    time.advance(TTL_S * 1000 + 1);
    const { stub } = await shardStubFor("slider");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await affinityEvents(model)).toMatchObject({ expired: 1 });
    await servedBy(model, "slider");
    expect(await affinityEvents(model)).toMatchObject({ miss: 2, created: 2 });
  });

  it("treats a pin found past its TTL before the sweep ran as expired", async () => {
    const { model } = await setup();
    time = frozenClock();
    await servedBy(model, "late");
    time.advance(TTL_S * 1000 + 1);
    await servedBy(model, "late");
    expect(await affinityEvents(model)).toMatchObject({ expired: 1, miss: 2, created: 2, hit: 0 });
  });

  it("drops the pin when its replica errors; fallback serves; the next request pins afresh (dropped_error)", async () => {
    const { model } = await setup();
    const first = await servedBy(model, "unlucky");
    const pinnedServer = servers[["a", "b", "c"].indexOf(first.replica!)]!;
    await pinnedServer.setBehaviour({ status: 500 });
    try {
      const failed = await servedBy(model, "unlucky");
      expect(failed.status).toBe(200);
      expect(failed.replica).not.toBe(first.replica);
      expect(failed.attempts).toBe("2");
      const events = await affinityEvents(model);
      expect(events).toMatchObject({ hit: 1, dropped_error: 1 });
      await servedBy(model, "unlucky");
      expect(await affinityEvents(model)).toMatchObject({ miss: 2, created: 2 });
    } finally {
      await pinnedServer.setBehaviour({});
    }
  });

  // Any failure of the pinned replica drops the pin, not only a 5xx: each kind below is a
  // failure verdict (src/core/upstream/verdict.ts) that must reach the drop (src/app/model-call/pool-session.ts).
  describe("drops the pin on every kind of failure of its replica, not only a 5xx", () => {
    const ids = ["a", "b", "c"];
    type Failure = "timeout" | "connect_error" | "429" | "broken_body";
    const failures: { kind: Failure; fallback: boolean }[] = [
      { kind: "timeout", fallback: true },
      { kind: "connect_error", fallback: true },
      { kind: "429", fallback: true },
      { kind: "broken_body", fallback: false }, // bytes reached the client: no retry, the stream just ends
    ];

    it.each(failures)("$kind", async ({ kind, fallback }) => {
      // A per-try timeout long enough that a healthy replica on a loaded machine never hits it.
      const routing = `{ affinity: { ttl_s: ${TTL_S} }${kind === "timeout" ? ", try_timeout_ms: 1000" : ""} }`;
      const { model, pool, replicas } = await setup({ routing });
      const user = `fails-${kind}`;
      const first = await servedBy(model, user);
      expect(first.status).toBe(200);
      const pinned = first.replica!;
      const pinnedServer = servers[ids.indexOf(pinned)]!;
      expect((await servedBy(model, user)).replica).toBe(pinned); // pinned: a hit
      expect(await affinityEvents(model)).toMatchObject({ miss: 1, created: 1, hit: 1, dropped_error: 0 });

      // The pinned replica now fails in one way; the others stay healthy.
      if (kind === "connect_error") {
        const dead = await deadUrl();
        await publish(statefulConfig({ model, pool, replicas: replicas.map((r) => (r.id === pinned ? { ...r, url: dead } : r)), routing }).yaml);
      } else {
        await pinnedServer.setBehaviour(kind === "timeout" ? { hang: true } : kind === "429" ? { status: 429 } : { streamChunks: 6, streamCutAfter: 2 });
      }
      try {
        if (fallback) {
          const failed = await servedBy(model, user);
          expect(failed.status).toBe(200);
          expect(failed.attempts).toBe("2"); // the pin was tried first, and failed
          expect(failed.replica).not.toBe(pinned);
        } else {
          const res = await chat(model, { stream: true }, as(user));
          expect(res.headers.get("x-switchyard-replica")).toBe(pinned);
          const { text } = await readToEnd(res, 10_000, "the pinned replica's broken stream");
          expect(text).not.toContain("[DONE]");
        }
        // The drop reaches the shard with the isolate's next batch (a body's end settles
        // just after the client has read it): polled, bounded.
        await expect
          .poll(async () => (await affinityEvents(model)).dropped_error, { timeout: 5_000, interval: 50, message: `no dropped_error after a ${kind} of the pinned replica` })
          .toBe(1);
      } finally {
        if (kind === "connect_error") await publish(statefulConfig({ model, pool, replicas, routing }).yaml);
        else await pinnedServer.setBehaviour({});
      }
      // The next request, to a healthy pool again, is a miss that pins afresh (by weight: possibly the same replica).
      await servedBy(model, user);
      expect(await affinityEvents(model)).toMatchObject({ miss: 2, created: 2, dropped_error: 1, dropped_unavailable: 0 });
    }, 20_000);
  });

  it("drops a pin whose replica is no longer allowed (weight 0) and picks afresh (dropped_unavailable)", async () => {
    const { model, pool } = await setup();
    const first = await servedBy(model, "moved");
    const weights = ["a", "b", "c"].map((id) => (id === first.replica ? 0 : 1));
    const replicas = servers.map((s, i) => ({ id: ["a", "b", "c"][i]!, url: s.url, weight: weights[i]! }));
    await publish(statefulConfig({ model, pool, replicas, routing: `{ affinity: { ttl_s: ${TTL_S} } }` }).yaml);
    const next = await servedBy(model, "moved");
    expect(next.replica).not.toBe(first.replica);
    expect(await affinityEvents(model)).toMatchObject({ dropped_unavailable: 1, created: 2 });
    expect((await servedBy(model, "moved")).replica).toBe(next.replica);
  });

  it("drops a pin whose replica was removed from the config", async () => {
    const { model, pool } = await setup();
    const first = await servedBy(model, "removed");
    const replicas = servers.map((s, i) => ({ id: ["a", "b", "c"][i]!, url: s.url })).filter((r) => r.id !== first.replica);
    await publish(statefulConfig({ model, pool, replicas, routing: `{ affinity: { ttl_s: ${TTL_S} } }` }).yaml);
    expect((await servedBy(model, "removed")).replica).not.toBe(first.replica);
    expect(await affinityEvents(model)).toMatchObject({ dropped_unavailable: 1 });
  });

  it("gives concurrent first requests on one key one pin", async () => {
    const { model } = await setup();
    const results = await Promise.all(Array.from({ length: 20 }, () => servedBy(model, "burst")));
    expect(new Set(results.map((r) => r.replica)).size).toBe(1);
    expect(await affinityEvents(model)).toMatchObject({ miss: 1, created: 1, hit: 19 });
  });

  it("keeps pins across the shard's eviction and restart", async () => {
    const { model } = await setup();
    const first = await servedBy(model, "durable");
    const { stub } = await shardStubFor("durable");
    await evictDurableObject(stub);
    expect((await servedBy(model, "durable")).replica).toBe(first.replica);
  });

  it("stores the SHA-256 of the bearer credential, never the credential", async () => {
    const { model } = await setup();
    await servedBy(model, "sk-very-secret");
    const { stub } = await shardStubFor("sk-very-secret");
    const keys = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql.exec<{ key: string }>("SELECT key FROM pins WHERE model = ?", model).toArray().map((r) => r.key),
    );
    expect(keys).toEqual([toHex(await sha256("sk-very-secret"))]);
  });

  it("is off with routing.affinity.enabled: false (every request picks afresh)", async () => {
    const { model } = await setup({ routing: "{ affinity: { enabled: false } }" });
    const seen = new Set<string | null>();
    for (let i = 0; i < 30; i++) seen.add((await servedBy(model, "nomad")).replica);
    expect(seen.size).toBeGreaterThan(1);
    expect(await affinityEvents(model)).toMatchObject({ miss: 0, created: 0, hit: 0 });
  });
});

describe("X-Route-Pin admin override", () => {
  it("sends the request to the named replica with the admin token, bypassing affinity", async () => {
    const { model } = await setup();
    const first = await servedBy(model, "operator");
    const other = ["a", "b", "c"].find((id) => id !== first.replica)!;
    const forced = await servedBy(model, "operator", { "x-route-pin": other, "x-switchyard-admin-token": ADMIN_TOKEN });
    expect(forced.replica).toBe(other);
    expect((await servedBy(model, "operator")).replica).toBe(first.replica); // the pin is untouched
  });

  it("ignores the header without a valid admin token", async () => {
    const { model } = await setup();
    const first = await servedBy(model, "sneaky");
    const other = ["a", "b", "c"].find((id) => id !== first.replica)!;
    const attempts: Record<string, string>[] = [{ "x-route-pin": other }, { "x-route-pin": other, "x-switchyard-admin-token": "wrong" }];
    for (const headers of attempts) {
      expect((await servedBy(model, "sneaky", headers)).replica).toBe(first.replica);
    }
    const recorded = (await Promise.all(servers.map((s) => s.stats()))).flatMap((s) => s.recent);
    expect(recorded.some((r) => r.headers["x-route-pin"] !== undefined)).toBe(false);
  });

  it("refuses an unknown replica with 400", async () => {
    const { model } = await setup();
    const res = await chat(model, {}, { "x-route-pin": "nope", "x-switchyard-admin-token": ADMIN_TOKEN });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unknown_replica");
  });
});

describe("kill switch", () => {
  it("ROUTING_AFFINITY_ENABLED=0 skips the shard entirely", async () => {
    const { openSession } = await import("../../src/app/model-call/pool-session");
    const { ConfigSource } = await import("../../src/platform/config-source");
    const { IsolateState } = await import("../../src/app/state/isolate-state");
    const { cryptoRandom } = await import("../../src/lib/random");
    const { model } = await setup();
    const snapshot = (await new ConfigSource().get(env)).current!;
    const route = snapshot.routes.get(model)!;
    const state = new IsolateState();
    const ctx = createExecutionContext();
    for (let i = 0; i < 5; i++) {
      const session = await openSession({
        env: { ...env, ROUTING_AFFINITY_ENABLED: "0" },
        ctx,
        random: cryptoRandom(),
        state,
        snapshot,
        route,
        request: new Request("https://x", { headers: as("switched-off") }),
        bearer: "switched-off",
        forced: null,
        affinity: true,
        startedAt: 0,
      });
      expect(session.candidates.length).toBe(3);
      session.onAttemptStart(session.candidates[0]!, 0);
      session.settle([{ replica: session.candidates[0]!.id, outcome: { kind: "answered", status: 200 }, ms: 1 }], "complete", 200);
    }
    await state.flush();
    await waitOnExecutionContext(ctx);
    expect(state.pins.size).toBe(0);
    expect(await affinityEvents(model)).toMatchObject({ miss: 0, created: 0, hit: 0 });
    // The same sessions with the switch on do pin: the zeros above are the switch's doing.
    const on = await openSession({ env, ctx, random: cryptoRandom(), state, snapshot, route, request: new Request("https://x", { headers: as("switched-on") }), bearer: "switched-on", forced: null, affinity: true, startedAt: 0 });
    on.settle([], null, 499);
    expect(state.pins.size).toBe(1);
  });
});
