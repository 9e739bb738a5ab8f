import { env } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { ConfigSource } from "../../src/platform/config-source";
import { afterEach, describe, expect, it } from "vitest";
import type { FakeBehaviour, FleetServer } from "../support/fleet";
import { chatRequests as modelRequests, spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, chat, openAIErrorOf, publish, routerFetch } from "../support/router";
import { frozenClock, metricsText, metricValue, poolAfter, poolStub, runPoolAlarm, statefulConfig } from "../support/state";

const spawned: FleetServer[] = [];
async function server(behaviour: FakeBehaviour = {}, id = "s"): Promise<FleetServer> {
  const s = await spawnServer(behaviour, id);
  spawned.push(s);
  return s;
}
let time: ReturnType<typeof frozenClock> | undefined;
afterEach(async () => {
  time?.restore();
  time = undefined;
  await Promise.all(spawned.splice(0).map((s) => s.close()));
});

const NO_AFFINITY = "{ affinity: { enabled: false } }";
const COOLDOWN_MS = 10_000;

async function setup(replicas: { id: string; url: string; weight?: number }[], circuit: string, poolExtra = "") {
  const config = statefulConfig({
    model: `m-${crypto.randomUUID().slice(0, 8)}`,
    replicas,
    routing: NO_AFFINITY,
    poolExtra: `circuit: ${circuit}${poolExtra ? `\n    ${poolExtra}` : ""}`,
  });
  await publish(config.yaml);
  return config;
}

async function send(model: string) {
  const res = await chat(model);
  const body = await res.text();
  return { status: res.status, replica: res.headers.get("x-switchyard-replica"), attempts: res.headers.get("x-switchyard-attempts"), body };
}

/**
 * A replica's state at the pool's object once it has counted `requests` requests. The
 * router reports outcomes in batches after the response, so the object is read only
 * once the reports of the requests sent so far have arrived.
 */
async function circuitOf(pool: string, replica: string, requests: number) {
  const snapshot = await poolAfter(pool, requests);
  return snapshot.replicas.find((r) => r.id === replica)!;
}

describe("circuit breaker", () => {
  it("opens after N consecutive failures and takes the replica out of the candidate list", async () => {
    const [bad, good] = [await server({ status: 500 }, "bad"), await server({}, "good")];
    const { model, pool } = await setup(
      [{ id: "bad", url: bad.url, weight: 1000 }, { id: "good", url: good.url, weight: 1 }],
      `{ consecutive_failures: 3, cooldown_ms: ${COOLDOWN_MS} }`,
    );
    for (let i = 0; i < 3; i++) expect((await send(model)).status).toBe(200); // fallback to good each time
    expect((await circuitOf(pool, "bad", 3)).circuit).toBe("open");
    const before = await modelRequests(bad);
    for (let i = 0; i < 5; i++) {
      const r = await send(model);
      expect(r).toMatchObject({ status: 200, replica: "good", attempts: "1" });
    }
    expect(await modelRequests(bad)).toBe(before);

    const text = await metricsText();
    expect(metricValue(text, "switchyard_circuit_state", { pool, replica: "bad" })).toBe(2);
    expect(metricValue(text, "switchyard_circuit_transitions_total", { pool, replica: "bad", from: "closed", to: "open" })).toBe(1);
    const routing = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { models: Record<string, { replicas: { id: string; state: { circuit: string } }[] }> };
    expect(routing.models[model]!.replicas.find((r) => r.id === "bad")!.state.circuit).toBe("open");
  });

  it("opens on the error ratio over the window, not before min_requests", async () => {
    const flaky = await server({ status: 503 }, "flaky");
    const { model, pool } = await setup([{ id: "f", url: flaky.url }], `{ consecutive_failures: 1000, error_ratio: 0.5, min_requests: 6, window_ms: 60000 }`);
    for (let i = 0; i < 5; i++) await send(model);
    expect((await circuitOf(pool, "f", 5)).circuit).toBe("closed");
    await send(model);
    expect((await circuitOf(pool, "f", 6)).circuit).toBe("open");
  });

  it("answers 503 fast when every circuit is open, without calling upstream", async () => {
    const bad = await server({ status: 500 }, "bad");
    const { model } = await setup([{ id: "bad", url: bad.url }], `{ consecutive_failures: 2, cooldown_ms: ${COOLDOWN_MS} }`);
    expect((await send(model)).status).toBe(502);
    expect((await send(model)).status).toBe(502);
    const before = await modelRequests(bad);
    const res = await chat(model);
    expect(res.status).toBe(503);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "no_healthy_replica", message: expect.stringContaining("(every circuit is open)") });
    // Come back when the circuit takes its probe, not at once (the SDKs would retry twice into it).
    const retryAfter = Number(res.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(COOLDOWN_MS / 1000));
    expect(await modelRequests(bad)).toBe(before);
  });

  it("tries anyway when the pool is fail-open", async () => {
    const bad = await server({ status: 500 }, "bad");
    const { model } = await setup([{ id: "bad", url: bad.url }], `{ consecutive_failures: 2, cooldown_ms: ${COOLDOWN_MS} }`, "fail_open: true");
    await send(model);
    await send(model);
    const before = await modelRequests(bad);
    expect((await send(model)).status).toBe(502);
    expect(await modelRequests(bad)).toBe(before + 1);
  });

  it("open → half_open after the cooldown; a successful probe closes it", async () => {
    const s = await server({ status: 500 }, "recovering");
    const { model, pool } = await setup([{ id: "r", url: s.url }], `{ consecutive_failures: 1, cooldown_ms: ${COOLDOWN_MS} }`);
    time = frozenClock();
    await send(model);
    expect((await circuitOf(pool, "r", 1)).circuit).toBe("open");
    time.advance(COOLDOWN_MS - 1);
    expect((await send(model)).status).toBe(503);
    await s.setBehaviour({});
    time.advance(1);
    expect(await send(model)).toMatchObject({ status: 200, replica: "r" });
    expect((await circuitOf(pool, "r", 2)).circuit).toBe("closed");
    const text = await metricsText();
    for (const [from, to] of [["closed", "open"], ["open", "half_open"], ["half_open", "closed"]]) {
      expect(metricValue(text, "switchyard_circuit_transitions_total", { pool, replica: "r", from: from!, to: to! }), `${from}→${to}`).toBe(1);
    }
  });

  it("a failed probe re-opens it with a doubled cooldown", async () => {
    const s = await server({ status: 500 }, "relapsing");
    const { model, pool } = await setup([{ id: "r", url: s.url }], `{ consecutive_failures: 1, cooldown_ms: ${COOLDOWN_MS}, max_cooldown_ms: 60000 }`);
    time = frozenClock();
    await send(model);
    expect((await circuitOf(pool, "r", 1)).reopenAt).toBe(time.now + COOLDOWN_MS);
    time.advance(COOLDOWN_MS);
    expect((await send(model)).status).toBe(502); // the probe went upstream and failed
    const reopened = await circuitOf(pool, "r", 2);
    expect(reopened.circuit).toBe("open");
    expect(reopened.reopenAt).toBe(time.now + 2 * COOLDOWN_MS);
  });

  it("half-open admits a bounded number of probes", async () => {
    const s = await server({ status: 500 }, "probed");
    const { model, pool } = await setup([{ id: "r", url: s.url }], `{ consecutive_failures: 1, cooldown_ms: ${COOLDOWN_MS}, half_open_probes: 1 }`);
    time = frozenClock();
    await send(model);
    expect((await circuitOf(pool, "r", 1)).circuit).toBe("open"); // the pool's object knows, not only this isolate
    await s.setBehaviour({ latencyMs: 300 });
    time.advance(COOLDOWN_MS);
    const results = await Promise.all([send(model), send(model), send(model)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 503, 503]);
  });

  it("a half-open probe never reported back frees its slot after its TTL (its isolate may be gone)", async () => {
    const s = await server({ status: 500 }, "lost-probe");
    const { model, pool } = await setup([{ id: "r", url: s.url }], `{ consecutive_failures: 1, cooldown_ms: ${COOLDOWN_MS}, half_open_probes: 1 }`);
    time = frozenClock();
    await send(model);
    expect((await circuitOf(pool, "r", 1)).circuit).toBe("open");
    const spec = (await new ConfigSource().get(env)).current!.poolSpecs.get(pool)!;
    const admit = async () => (await poolStub(pool).admitProbe({ spec, replica: "r", ttlMs: 5_000 })).admission;
    time.advance(COOLDOWN_MS);
    expect(await admit()).toBe("probe");
    expect(await admit()).toBe("no"); // one slot, taken, and its request never reports
    time.advance(4_999);
    expect(await admit()).toBe("no");
    time.advance(1_001); // past the probe's TTL, and a sweep is due
    expect(await admit()).toBe("probe");
  });

  it("keeps its state across the pool object's eviction and restart", async () => {
    const bad = await server({ status: 500 }, "bad");
    const { model, pool } = await setup([{ id: "bad", url: bad.url }], `{ consecutive_failures: 1, cooldown_ms: 600000, max_cooldown_ms: 600000 }`);
    await send(model);
    expect((await circuitOf(pool, "bad", 1)).circuit).toBe("open");
    await evictDurableObject(poolStub(pool));
    expect((await poolStub(pool).snapshot()).replicas[0]!.circuit).toBe("open");
    expect((await send(model)).status).toBe(503);
  });
});

describe("active health checks", () => {
  it("the pool's alarm checks each replica; failures open the circuit, recovery closes it", async () => {
    const s = await server({ healthy: false }, "checked");
    const { model, pool } = await setup([{ id: "h", url: s.url }], `{ consecutive_failures: 1, cooldown_ms: ${COOLDOWN_MS} }`, "health_check: 30");
    time = frozenClock();
    expect((await send(model)).status).toBe(200); // model requests still work; only /health fails
    expect(await runPoolAlarm(poolStub(pool))).toBe(true);
    const sick = await circuitOf(pool, "h", 1);
    expect(sick).toMatchObject({ healthy: false, circuit: "open" });
    expect((await s.stats()).byPath["/health"]).toBe(1);

    const routing = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { models: Record<string, { replicas: { id: string; state: { healthy: boolean; circuit: string; inflight: number } }[] }> };
    expect(routing.models[model]!.replicas[0]!.state).toMatchObject({ healthy: false, circuit: "open", inflight: 0 });

    await s.setBehaviour({ healthy: true });
    time.advance(COOLDOWN_MS);
    expect(await runPoolAlarm(poolStub(pool))).toBe(true);
    expect(await circuitOf(pool, "h", 1)).toMatchObject({ healthy: true, circuit: "closed" });
    expect(metricValue(await metricsText(), "switchyard_replica_healthy", { pool, replica: "h" })).toBe(1);
  });

  it("is off at health_check: 0 (no alarm, no /health calls)", async () => {
    const s = await server({}, "unchecked");
    const { model, pool } = await setup([{ id: "u", url: s.url }], "{}");
    await send(model);
    expect(await runPoolAlarm(poolStub(pool))).toBe(false);
    expect((await s.stats()).byPath["/health"] ?? 0).toBe(0);
  });
});
