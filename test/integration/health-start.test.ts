/**
 * Health checks run without traffic: a pool's object learns its spec when a config is
 * published (PUT /admin/config) and from the Worker's cron (a fresh deploy, or a config
 * written straight to KV), not only from its first request. And /routing shows a circuit
 * as the next request would find it.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { serversClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, chat, publish, publishUnchecked, routerFetch } from "../support/router";
import { frozenClock, poolAfter, poolStub, runPoolAlarm, statefulConfig } from "../support/state";
import { SPEC_UNTOLD_MS } from "../../src/core/state/untold";

const servers = serversClosedAfterEach();
let time: ReturnType<typeof frozenClock> | undefined;
afterEach(() => {
  time?.restore();
  time = undefined;
});

const alarmOf = (pool: string) => runInDurableObject(poolStub(pool), (_instance, state) => state.storage.getAlarm());

describe("health checks start without traffic", () => {
  it("when a config is published through the admin endpoint", async () => {
    const [s] = await servers([{ healthy: false }], "published-");
    const config = statefulConfig({ replicas: [{ id: "h", url: s!.url }], poolExtra: "health_check: 30\n    circuit: { consecutive_failures: 1 }" });
    await publish(config.yaml);
    await expect.poll(() => alarmOf(config.pool), { timeout: 3_000, interval: 20 }).not.toBeNull();
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect((await s!.stats()).byPath["/health"]).toBe(1);
    expect((await s!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0); // no request ever came
    expect((await poolStub(config.pool).snapshot()).replicas[0]).toMatchObject({ healthy: false, circuit: "open" });
  });

  it("from the cron, for a config written straight to KV", async () => {
    const [s] = await servers([{}], "cron-");
    const config = statefulConfig({ replicas: [{ id: "h", url: s!.url }], poolExtra: "health_check: 30" });
    await publishUnchecked(config.yaml); // what `switchyard push --remote` does: no Worker involved
    expect(await alarmOf(config.pool)).toBeNull();
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await alarmOf(config.pool)).not.toBeNull();
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect((await s!.stats()).byPath["/health"]).toBe(1);
  });
});

describe("health checks stop for a pool no config names any more", () => {
  it("within SPEC_UNTOLD_MS of the last telling: a dropped pool's replica (and its api key) is called no more, a kept pool's still is", async () => {
    const [dropped, kept] = await servers([{}, {}], "untold-");
    const [p, q] = [`dropped-${crypto.randomUUID().slice(0, 8)}`, `kept-${crypto.randomUUID().slice(0, 8)}`];
    const pool = (name: string, url: string) => `  ${name}:\n    health_check: 30\n    replicas: [{ id: r, url: "${url}", api_key: "\${TEST_CLIENT_KEY}" }]\n`;
    await publish(`models:\n  mp: { pool: ${p} }\n  mq: { pool: ${q} }\npools:\n${pool(p, dropped!.url)}${pool(q, kept!.url)}`);
    await expect.poll(() => alarmOf(p), { timeout: 3_000, interval: 20 }).not.toBeNull();
    await expect.poll(() => alarmOf(q), { timeout: 3_000, interval: 20 }).not.toBeNull();
    expect(await runPoolAlarm(poolStub(p))).toBe(true);
    expect(await runPoolAlarm(poolStub(q))).toBe(true);
    const healthChecks = async (server: typeof dropped) => (await server!.stats()).byPath["/health"] ?? 0;
    expect([await healthChecks(dropped), await healthChecks(kept)]).toEqual([1, 1]);

    // The next config drops p. Its object is not told; the cron names q each minute.
    await publish(`models:\n  mq: { pool: ${q} }\npools:\n${pool(q, kept!.url)}`);
    time = frozenClock(Date.now() + SPEC_UNTOLD_MS + 1_000);
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await runPoolAlarm(poolStub(p));
    await runPoolAlarm(poolStub(q));
    expect([await healthChecks(dropped), await healthChecks(kept)]).toEqual([1, 2]);
    expect(await alarmOf(p), "the dropped pool's alarm is not armed again").toBeNull();
  });
});

describe("health checks and metrics scrapes carry the replica's credential", () => {
  it("as model calls do, at the same URL join; the object never stores the key, and gets it back after a restart", async () => {
    const [s] = await servers([{ metrics: "vllm:num_requests_waiting 0\n" }], "keyed-");
    const pool = `keyed-${crypto.randomUUID().slice(0, 8)}`;
    // A /v1 base: checks go to the server root, as every path but the API's does.
    const yaml = `models:\n  m: { pool: ${pool} }\npools:\n  ${pool}:\n    health_check: 30\n    metrics: { scrape_ms: 1500 }\n    replicas:\n      - { id: k, url: "${s!.url}/v1", api_key: "\${TEST_CLIENT_KEY}" }\n`;
    await publish(yaml);
    await expect.poll(() => alarmOf(pool), { timeout: 3_000, interval: 20 }).not.toBeNull();
    expect(await runPoolAlarm(poolStub(pool)), "first alarm").toBe(true);
    const seen = (await s!.stats()).recent.filter((r) => r.method === "GET");
    expect(seen.map((r) => r.path).sort()).toEqual(["/health", "/metrics"]);
    for (const r of seen) expect(r.headers.authorization).toBe("Bearer sk-from-secret"); // vitest.config.ts TEST_VARS
    const stored = await runInDurableObject(poolStub(pool), (_instance, state) => state.storage.sql.exec<{ json: string }>("SELECT json FROM spec").one().json);
    expect(stored).toContain(`"id":"k"`);
    expect(stored).not.toContain("sk-from-secret");

    // Restarted: the stored spec has no key, so scrapes go without one until the cron's announce brings it back.
    // (Every 1.5 s, not every second: evictDurableObject never returned with a scrape started at the start of every second.)
    const { evictDurableObject } = await import("cloudflare:test");
    await evictDurableObject(poolStub(pool));
    await s!.reset();
    const nextScrape = async () => {
      await expect.poll(async () => (await s!.stats()).recent.some((r) => r.path === "/metrics"), { timeout: 5_000, interval: 50 }).toBe(true);
      return (await s!.stats()).recent.find((r) => r.path === "/metrics")!.headers.authorization;
    };
    expect(await nextScrape()).toBeUndefined();
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await s!.reset();
    expect(await nextScrape()).toBe("Bearer sk-from-secret");
  });
});

describe("an Anthropic-native replica's checks carry its key as Anthropic's own header", () => {
  it("x-api-key and anthropic-version, no bearer token, on health checks and metrics scrapes (a scoring pool scrapes by default)", async () => {
    const [s] = await servers([{ metrics: "vllm:num_requests_waiting 0\n" }], "anthropic-keyed-");
    const pool = `anthropic-keyed-${crypto.randomUUID().slice(0, 8)}`;
    const yaml = `models:\n  m: { pool: ${pool} }\npools:\n  ${pool}:\n    policy: switchyard\n    health_check: 30\n    replicas:\n      - { id: a, url: "${s!.url}", dialect: anthropic, api_key: "\${TEST_CLIENT_KEY}" }\n`;
    await publish(yaml);
    await expect.poll(() => alarmOf(pool), { timeout: 3_000, interval: 20 }).not.toBeNull();
    expect(await runPoolAlarm(poolStub(pool)), "first alarm").toBe(true);
    const seen = (await s!.stats()).recent.filter((r) => r.method === "GET");
    expect(seen.map((r) => r.path).sort()).toEqual(["/health", "/metrics"]);
    for (const r of seen) {
      expect(r.headers["x-api-key"], r.path).toBe("sk-from-secret"); // vitest.config.ts TEST_VARS
      expect(r.headers["anthropic-version"], r.path).toBe("2023-06-01");
      expect(r.headers.authorization, r.path).toBeUndefined();
    }
  });
});

describe("/routing shows circuits as the next request finds them", () => {
  interface RoutingReplica {
    id: string;
    eligible: boolean;
    state: { circuit: string };
  }
  const replicaIn = async (model: string, id: string) => {
    // /routing is for the admin (routing.public_view defaults to false).
    const body = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { models: Record<string, { replicas: RoutingReplica[] }> };
    return body.models[model]!.replicas.find((r) => r.id === id)!;
  };

  it("open and not eligible during the cooldown; half-open and eligible once it has passed", async () => {
    const [bad, good] = await servers([{ status: 500 }, {}], "display-");
    const config = statefulConfig({
      model: `display-${crypto.randomUUID().slice(0, 8)}`,
      replicas: [{ id: "bad", url: bad!.url, weight: 1000 }, { id: "good", url: good!.url }],
      routing: "{ affinity: { enabled: false } }",
      poolExtra: "circuit: { consecutive_failures: 1, cooldown_ms: 10000 }",
    });
    await publish(config.yaml);
    time = frozenClock();
    expect((await chat(config.model)).status).toBe(200); // bad fails, good answers
    await poolAfter(config.pool, 1);
    expect(await replicaIn(config.model, "bad")).toMatchObject({ eligible: false, state: { circuit: "open" } });
    expect(await replicaIn(config.model, "good")).toMatchObject({ eligible: true, state: { circuit: "closed" } });
    time.advance(10_000);
    expect(await replicaIn(config.model, "bad")).toMatchObject({ eligible: true, state: { circuit: "half_open" } });
  });
});
