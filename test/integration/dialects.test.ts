/**
 * The translated dialects (/v1/messages, /v1/responses) with the pool's shared state in
 * workerd: a named user is the affinity user, and a shed request is refused in each
 * surface's own shape with its Retry-After. The SDK-level tests are in
 * test/e2e/dialects.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { serversClosedAfterEach, spawnServer, vllmClosedAfterEach } from "../support/fleet";
import { post, publish } from "../support/router";
import { affinityEvents, poolStub, runPoolAlarm, statefulConfig } from "../support/state";

const servers = serversClosedAfterEach();
const engines = vllmClosedAfterEach();

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
    expect(await runPoolAlarm(poolStub(pool))).toBe(true);

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

describe("prefix-cache picking on the translated dialects (policy: switchyard)", () => {
  /** A tenant's long shared system prompt: 40 blocks of the router's 64-character hashing. */
  const systemPrompt = (tenant: number) => `You are the assistant of tenant ${tenant}. `.padEnd(2_560, `policy text of tenant ${tenant}; `);

  it("reads the prompt of the translated request: each tenant's follow-ups, in either dialect, go to the replica that cached its system prompt", async () => {
    const fleet = await engines(4, { decodeMsPerToken: 0, prefillMsPerToken: 0 }, "dialect-prefix");
    const pool = `prefix-${crypto.randomUUID().slice(0, 8)}`;
    const replicas = fleet.map((e, i) => `      - { id: r${i}, url: "${e.url}" }`).join("\n");
    await publish(`models:\n  fake-vllm-model: { pool: ${pool} }\npools:\n  ${pool}:\n    policy: switchyard\n    replicas:\n${replicas}\nrouting: { affinity: { enabled: false } }\n`);
    const viaMessages = async (tenant: number, question: string) => {
      const res = await post("/v1/messages", { model: "fake-vllm-model", max_tokens: 2, system: systemPrompt(tenant), messages: [{ role: "user", content: question }] });
      const body = (await res.json()) as { usage: { cache_read_input_tokens?: number } };
      return { replica: res.headers.get("x-switchyard-replica"), cached: body.usage.cache_read_input_tokens ?? 0 };
    };
    const viaResponses = async (tenant: number, question: string) => {
      const res = await post("/v1/responses", { model: "fake-vllm-model", max_output_tokens: 2, instructions: systemPrompt(tenant), input: question });
      await res.arrayBuffer();
      return { replica: res.headers.get("x-switchyard-replica") };
    };
    const TENANTS = 6;
    const home = new Map<number, string | null>();
    for (let t = 0; t < TENANTS; t++) home.set(t, (await viaMessages(t, "first question")).replica);
    let cached = 0;
    for (let t = 0; t < TENANTS; t++) {
      const again = await viaMessages(t, "follow-up");
      expect(again.replica, `tenant ${t}, Messages`).toBe(home.get(t));
      cached += again.cached;
      expect((await viaResponses(t, "follow-up")).replica, `tenant ${t}, Responses`).toBe(home.get(t));
    }
    // Random placement would keep both of a tenant's follow-ups home with chance (1/4)^2 each; the engines report the reuse.
    expect(cached).toBeGreaterThan(TENANTS * 500);
    expect(new Set(home.values()).size).toBeGreaterThan(1);
  });
});

describe("an upstream's error on the translated dialects", () => {
  it("keeps its words in the shapes servers give them, its code and param, and the principal's x-ratelimit headers", async () => {
    const bodies: [unknown, string, string | null][] = [
      [{ error: { message: "prompt too long", code: "context_length_exceeded", param: "messages", type: "invalid_request_error" } }, "prompt too long", "context_length_exceeded"],
      [{ object: "error", message: "This model's maximum context length is 4096 tokens", type: "BadRequestError", code: 400 }, "This model's maximum context length is 4096 tokens", null], // vLLM's older shape
      [{ error: 'Expected "inputs" in request body' }, 'Expected "inputs" in request body', null], // KServe's
      [{ detail: [{ loc: ["body", "messages"], msg: "field required", type: "missing" }] }, "body.messages: field required", null], // FastAPI's 422
      [{}, "The upstream answered 400", null],
    ];
    for (const [body, message, code] of bodies) {
      const [s] = await servers([{ reply: { status: 400, body } }], "dialect-error-");
      const model = `m-${crypto.randomUUID().slice(0, 8)}`;
      await publish(`models:\n  ${model}: { pool: p }\npools:\n  p:\n    replicas: [{ id: r, url: "${s!.url}" }]\nauth:\n  keys: [{ name: limited, key: "\${TEST_CLIENT_KEY}" }]\nlimits:\n  - { key: limited, requests_per_minute: 1000 }\nrouting: { shared_state: false }\n`);
      const key = { authorization: "Bearer sk-from-secret" };
      const responses = await post("/v1/responses", { model, input: "hi" }, key);
      expect(responses.status).toBe(400);
      expect(responses.headers.get("x-ratelimit-limit-requests")).toBe("1000");
      expect(responses.headers.get("x-switchyard-replica")).toBe("r");
      const openai = (await responses.json()) as { error: { message: string; code: string; param: string | null } };
      expect(openai.error.message).toBe(message);
      expect(openai.error.code).toBe(code ?? "upstream_error");
      if (code !== null) expect(openai.error.param).toBe("messages");

      const anthropic = await post("/v1/messages", { model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, key);
      expect(anthropic.status).toBe(400);
      expect(anthropic.headers.get("x-ratelimit-limit-requests")).toBe("1000");
      expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message } });
    }
  });
});
