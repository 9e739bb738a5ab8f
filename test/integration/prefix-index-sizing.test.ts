/**
 * The prefix index sized from the engine, through the whole router in workerd: a fake vLLM
 * replica with a small KV cache says its size in vllm:cache_config_info, the router's index
 * for it takes that size (shown in /routing), and after more distinct prompts than the
 * engine holds the router no longer expects the evicted one to be cached, as the engine
 * reports. Deterministic: one replica, one request at a time.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { vllmClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, post, publish, routerFetch } from "../support/router";
import { poolStub } from "../support/state";

const engines = vllmClosedAfterEach();
const MODEL = "fake-vllm-model";
const ENGINE_BLOCKS = 120; // of 16 tokens: 1,920 tokens, about 2.9 of the prompts below
const TOKENS_PER_BLOCK = 16; // the fake's default block size, and the router's 64 characters at 4 a token
/** Router and engine cut the same text into blocks from differently rendered chats (roles, template): a request's counts may differ by this many blocks. */
const BLOCK_MARGIN = 2;

/** A tenant's system prompt: 2,560 characters, 40 blocks of the router's and ~40 of the engine's; tenants differ in the first block. */
const systemPrompt = (tenant: number) => `You are the assistant of tenant ${tenant}. `.padEnd(2_560, `policy text of tenant ${tenant}; `);

interface IndexView {
  expected_hit_blocks: number;
  looked_up_blocks: number;
  replicas: Record<string, { blocks: number; capacity_blocks: number; sized_by: string }>;
}

async function indexView(): Promise<IndexView> {
  const body = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { models: Record<string, { prefix_index: IndexView | null }> };
  return body.models[MODEL]!.prefix_index ?? { expected_hit_blocks: 0, looked_up_blocks: 0, replicas: {} }; // null until this isolate's first request to the pool
}

/** One request for a tenant's prompt: the engine's cached tokens, and the blocks the router expected cached. */
async function ask(tenant: number, question: string): Promise<{ cachedTokens: number; expectedBlocks: number; lookedUp: number }> {
  const before = await indexView();
  const res = await post("/v1/chat/completions", { model: MODEL, max_tokens: 2, messages: [{ role: "system", content: systemPrompt(tenant) }, { role: "user", content: question }] });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { usage: { prompt_tokens_details?: { cached_tokens?: number } } };
  const after = await indexView();
  return { cachedTokens: body.usage.prompt_tokens_details?.cached_tokens ?? 0, expectedBlocks: after.expected_hit_blocks - before.expected_hit_blocks, lookedUp: after.looked_up_blocks - before.looked_up_blocks };
}

describe("prefix index sized from the engine (vllm:cache_config_info)", () => {
  it("takes a small engine's size, and stops expecting a prompt the engine evicted; expected hits follow the engine's within 2 blocks a request", async () => {
    const [small] = await engines(1, { numGpuBlocks: ENGINE_BLOCKS, decodeMsPerToken: 0, prefillMsPerToken: 0 }, "sized");
    const pool = `sized-${crypto.randomUUID().slice(0, 8)}`;
    await publish(
      `models:\n  ${MODEL}: { pool: ${pool} }\npools:\n  ${pool}:\n    policy: switchyard\n    metrics: { scrape_ms: 60000 }\n    replicas:\n      - { id: s, url: "${small!.url}" }\nrouting: { affinity: { enabled: false } }\n`,
    );
    expect(await runDurableObjectAlarm(poolStub(pool))).toBe(true); // one scrape: the engine's cache_config_info

    const requests: Awaited<ReturnType<typeof ask>>[] = [];
    for (let tenant = 0; tenant < 6; tenant++) requests.push(await ask(tenant, "first question")); // ~246 blocks into 120
    const view = await indexView();
    expect(view.replicas.s).toMatchObject({ capacity_blocks: ENGINE_BLOCKS, sized_by: "engine" });
    expect(view.replicas.s!.blocks).toBeLessThanOrEqual(ENGINE_BLOCKS);

    const recent = await ask(5, "second question"); // still cached: both say so
    expect(recent.cachedTokens).toBeGreaterThanOrEqual(38 * TOKENS_PER_BLOCK);
    expect(recent.expectedBlocks).toBeGreaterThanOrEqual(38);
    const evicted = await ask(0, "second question"); // evicted by the engine: the router no longer claims it (the default 8,192 blocks would claim all 40)
    expect(evicted.cachedTokens).toBe(0);
    expect(evicted.expectedBlocks).toBe(0);

    for (const r of [...requests, recent, evicted]) {
      expect(r.lookedUp).toBeGreaterThanOrEqual(40);
      expect(Math.abs(r.expectedBlocks - r.cachedTokens / TOKENS_PER_BLOCK), JSON.stringify(r)).toBeLessThanOrEqual(BLOCK_MARGIN);
    }
    // The engine's own counters agree with what it reported request by request.
    const stats = await small!.stats();
    expect(stats.prefixCache.hitTokens).toBe([...requests, recent, evicted].reduce((n, r) => n + r.cachedTokens, 0));
  });

  it("keeps index_capacity_blocks when the config sets it, whatever the engine says", async () => {
    const [small] = await engines(1, { numGpuBlocks: ENGINE_BLOCKS, decodeMsPerToken: 0, prefillMsPerToken: 0 }, "fixed");
    const pool = `fixed-${crypto.randomUUID().slice(0, 8)}`;
    await publish(
      `models:\n  ${MODEL}: { pool: ${pool} }\npools:\n  ${pool}:\n    policy: switchyard\n    metrics: { scrape_ms: 60000 }\n    scoring: { index_capacity_blocks: 4096 }\n    replicas:\n      - { id: s, url: "${small!.url}" }\nrouting: { affinity: { enabled: false } }\n`,
    );
    expect(await runDurableObjectAlarm(poolStub(pool))).toBe(true);
    await ask(0, "first question");
    expect((await indexView()).replicas.s).toMatchObject({ capacity_blocks: 4096, sized_by: "config" });
  });
});
