/**
 * The translated dialects (/v1/messages, /v1/responses) with the pool's shared state in
 * workerd: a named user is the affinity user, and a shed request is refused in each
 * surface's own shape with its Retry-After. The SDK-level tests are in
 * test/e2e/dialects.test.ts.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { serversClosedAfterEach, spawnServer } from "../support/fleet";
import { post, publish } from "../support/router";
import { affinityEvents, poolStub, statefulConfig } from "../support/state";

const servers = serversClosedAfterEach();

const KEY = { authorization: "Bearer one-key-for-many-users" };
const messages = (model: string, user: string) => post("/v1/messages", { model, max_tokens: 8, metadata: { user_id: user }, messages: [{ role: "user", content: "hi" }] }, KEY);

describe("affinity on the translated dialects", () => {
  let fleet: FleetServer[];
  beforeAll(async () => {
    fleet = await Promise.all([spawnServer({}, "a"), spawnServer({}, "b")]);
  });
  afterAll(async () => {
    await Promise.all(fleet.map((s) => s.close()));
  });

  it("pins each metadata.user_id of one key apart, and keeps a user on its replica", async () => {
    const model = `m-${crypto.randomUUID().slice(0, 8)}`;
    await publish(statefulConfig({ model, replicas: fleet.map((s, i) => ({ id: ["a", "b"][i]!, url: s.url })), routing: "{ affinity: { ttl_s: 60 } }" }).yaml);
    const servedBy = async (user: string) => {
      const res = await messages(model, user);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      return res.headers.get("x-switchyard-replica");
    };
    const users = Array.from({ length: 20 }, (_, i) => `user-${i}`);
    const pinned = new Map<string, string | null>();
    for (const user of users) pinned.set(user, await servedBy(user));
    for (const user of users) expect(await servedBy(user)).toBe(pinned.get(user));
    // Keyed on the key alone, all 20 would share one pin. 20 even picks over 2 replicas: P(all alike) = 2^-19.
    expect(new Set(pinned.values()).size).toBe(2);
    expect(await affinityEvents(model)).toMatchObject({ miss: 20, created: 20, hit: 20 });
  });
});

describe("load shedding on the translated dialects", () => {
  it("refuses a sheddable request with 429 and Retry-After: Anthropic's rate_limit_error, OpenAI's error on /v1/responses", async () => {
    // A vLLM replica with 9 requests waiting: saturated for the switchyard policy (picking.md, "Load shedding").
    const saturated = 'vllm:num_requests_waiting{model_name="m"} 9\nvllm:num_requests_running{model_name="m"} 0\nvllm:kv_cache_usage_perc{model_name="m"} 0.1\n';
    const [a] = await servers([{ metrics: saturated }], "shed-dialects-");
    const pool = `shed-${crypto.randomUUID().slice(0, 8)}`;
    await publish(`models:\n  batch: { pool: ${pool}, priority: sheddable }\npools:\n  ${pool}:\n    policy: switchyard\n    metrics: { scrape_ms: 60000 }\n    shed_retry_after_s: 3\n    replicas:\n      - { id: a, url: "${a!.url}" }\nrouting: { affinity: { enabled: false } }\n`);
    expect(await runDurableObjectAlarm(poolStub(pool))).toBe(true);

    const shed = await post("/v1/messages", { model: "batch", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    expect(shed.status).toBe(429);
    expect(shed.headers.get("retry-after")).toBe("3");
    expect(await shed.json()).toMatchObject({ type: "error", error: { type: "rate_limit_error", message: expect.stringContaining("shedding load") } });

    const responses = await post("/v1/responses", { model: "batch", input: "hi" });
    expect(responses.status).toBe(429);
    expect(responses.headers.get("retry-after")).toBe("3");
    expect(await responses.json()).toMatchObject({ error: { code: "pool_saturated" } });
    expect((await a!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);
  });
});
