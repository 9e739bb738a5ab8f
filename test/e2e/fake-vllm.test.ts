/**
 * The fake vLLM replica on its own, over real HTTP: the token model, prefix cache,
 * eviction, the queue and the cost model, /metrics, streaming, LoRA slots and client
 * disconnects. Timings use small ms-per-token values and assert lower bounds and
 * orderings only: a loaded 2-core machine fires timers late, never early.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeVllm, type FakeVllmOptions, type FakeVllmServer, type VllmRequestRecord } from "../../tools/fakes/fake-vllm";

const JITTER_MS = 2; // a timer may fire up to ~1 ms before performance.now() says it is due
const POLL = { timeout: 10_000, interval: 10 }; // generous: catches a hang, not a slow machine
const HOLD_MS_PER_TOKEN = 60_000; // a decode cost no test waits out: requests stay running until aborted

const servers: FakeVllmServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function replica(o: FakeVllmOptions): Promise<FakeVllmServer> {
  const s = await startFakeVllm({ prefillMsPerToken: 0, decodeMsPerToken: 0, decodeMsPerExtraSeq: 0, ...o });
  servers.push(s);
  return s;
}

type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };

function post(s: FakeVllmServer, path: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
}

function complete(s: FakeVllmServer, prompt: string, extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return post(s, "/v1/completions", { model: s.stats().model, prompt, max_tokens: 1, ...extra }, signal);
}

async function usageOf(res: Response): Promise<Usage> {
  expect(res.status).toBe(200);
  return ((await res.json()) as { usage: Usage }).usage;
}

async function cachedTokens(s: FakeVllmServer, prompt: string, extra: Record<string, unknown> = {}): Promise<number> {
  return (await usageOf(await complete(s, prompt, extra))).prompt_tokens_details.cached_tokens;
}

/**
 * With block size 4, one block is 16 bytes. prompt("abc") is three full blocks of
 * 'a', 'b' and 'c' plus one byte, so its 13th token lets all three blocks be reused
 * (vLLM always recomputes the last prompt token).
 */
const BLOCK_BYTES = 16;
const prompt = (blocks: string, tail = ".") => [...blocks].map((ch) => ch.repeat(BLOCK_BYTES)).join("") + tail;

/** Reads an SSE body to its end and returns its `data:` payloads. */
async function sseEvents(res: Response): Promise<string[]> {
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const text = await res.text();
  return text.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
}

async function metrics(s: FakeVllmServer): Promise<string> {
  const res = await fetch(`${s.url}/metrics`);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return res.text();
}

/** The value of one sample line, found by its exact name and labels. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  if (line === undefined) throw new Error(`no sample ${series} in:\n${text}`);
  return Number(line.slice(series.length + 1));
}

/** Starts held streamed requests one at a time, so request i is record i + 1. */
async function startInOrder(s: FakeVllmServer, prompts: string[], extra: Record<string, unknown>): Promise<{ clients: AbortController[]; settled: Promise<unknown> }> {
  const clients: AbortController[] = [];
  const pending: Promise<unknown>[] = [];
  for (const p of prompts) {
    const c = new AbortController();
    clients.push(c);
    pending.push(complete(s, p, { stream: true, ...extra }, c.signal).then((r) => r.text()).catch(() => undefined)); // ends when aborted
    await expect.poll(() => s.stats().records.length, POLL).toBe(clients.length);
  }
  return { clients, settled: Promise.all(pending) };
}

function record(s: FakeVllmServer, seq: number): VllmRequestRecord {
  const r = s.stats().records.find((x) => x.seq === seq);
  if (!r) throw new Error(`no record ${seq}`);
  return r;
}

describe("token model", () => {
  it("counts every 4 bytes of the prompt as one token, rounding up, and renders chat messages in a fixed template", async () => {
    const s = await replica({});
    expect((await usageOf(await complete(s, "x".repeat(64)))).prompt_tokens).toBe(16);
    expect((await usageOf(await complete(s, "x".repeat(65)))).prompt_tokens).toBe(17);
    expect((await usageOf(await complete(s, "é".repeat(4)))).prompt_tokens).toBe(2); // 8 UTF-8 bytes

    // "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" is 52 bytes.
    const chat = await post(s, "/v1/chat/completions", { model: s.stats().model, messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
    const usage = await usageOf(chat);
    expect(usage).toEqual({ prompt_tokens: 13, completion_tokens: 3, total_tokens: 16, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it("gives the same answer to the same prompt with the same seed, another with another seed", async () => {
    const [a, b, c] = [await replica({ seed: 7 }), await replica({ seed: 7 }), await replica({ seed: 8 })];
    const text = async (s: FakeVllmServer) => ((await (await complete(s, "hello", { max_tokens: 6 })).json()) as { choices: { text: string }[] }).choices[0]!.text;
    const [ta, tb, tc] = [await text(a), await text(b), await text(c)];
    expect(ta).toMatch(/^([a-z]{3} ){6}$/); // one 4-byte word per token
    expect(tb).toBe(ta);
    expect(tc).not.toBe(ta);
  });

  it("refuses a request that could never fit in the KV cache, an unknown model and a bad max_tokens", async () => {
    const s = await replica({ blockSize: 4, numGpuBlocks: 4 }); // 16 tokens in all
    expect((await complete(s, "x".repeat(60), { max_tokens: 1 })).status).toBe(200); // 15 + 1 tokens
    const tooLong = await complete(s, "x".repeat(64), { max_tokens: 1 });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { error: { message: string } }).error.message).toContain("maximum context length is 16 tokens");
    expect((await post(s, "/v1/completions", { model: "nope", prompt: "x" })).status).toBe(404);
    expect((await complete(s, "x", { max_tokens: 0 })).status).toBe(400);
    expect(s.stats().rejected).toBe(3);
  });
});

describe("prefix cache", () => {
  it("reuses the longest cached run of leading blocks: a repeat hits, a different prompt does not, a changed early block breaks the chain", async () => {
    const s = await replica({ blockSize: 4, numGpuBlocks: 64 });
    expect(await cachedTokens(s, prompt("abcd"))).toBe(0);
    expect(await cachedTokens(s, prompt("abcd"))).toBe(16); // all four blocks
    expect(await cachedTokens(s, prompt("abxy"))).toBe(8); // the shared first two
    expect(await cachedTokens(s, prompt("wxyz"))).toBe(0);
    // Blocks b, c, d are cached with the same bytes, but their keys chain from block a's.
    expect(await cachedTokens(s, prompt("Zbcd"))).toBe(0);
    expect(await cachedTokens(s, prompt("aZcd"))).toBe(4);
    // A prompt that is exactly four blocks recomputes its last token, so only three are reused.
    expect(await cachedTokens(s, prompt("abcd", ""))).toBe(12);

    const queried = 17 + 17 + 17 + 17 + 17 + 17 + 16;
    const hits = 16 + 8 + 4 + 12;
    expect(s.stats().prefixCache).toEqual({ queriedTokens: queried, hitTokens: hits });
    const m = await metrics(s);
    const labels = `{model_name="${s.stats().model}",engine="0"}`;
    expect(sample(m, `vllm:prefix_cache_queries_total${labels}`)).toBe(queried);
    expect(sample(m, `vllm:prefix_cache_hits_total${labels}`)).toBe(hits);
  });

  it("keeps the base model's prefixes apart from each adapter's and from another cache_salt", async () => {
    const s = await replica({ blockSize: 4, loras: ["sql"], maxLora: 1, loraLoadMs: 0 });
    expect(await cachedTokens(s, prompt("abc"))).toBe(0);
    expect(await cachedTokens(s, prompt("abc"), { model: "sql" })).toBe(0);
    expect(await cachedTokens(s, prompt("abc"), { model: "sql" })).toBe(12);
    expect(await cachedTokens(s, prompt("abc"), { cache_salt: "tenant-2" })).toBe(0);
  });

  it("serves the next chat turn's prompt from the previous turn's blocks", async () => {
    const s = await replica({ blockSize: 4 });
    const model = s.stats().model;
    const turn1 = [{ role: "system", content: "You are terse. ".repeat(8) }, { role: "user", content: "Name three colours." }];
    const first = (await (await post(s, "/v1/chat/completions", { model, messages: turn1, max_tokens: 8 })).json()) as {
      choices: { message: { content: string } }[];
      usage: Usage;
    };
    const turn2 = [...turn1, { role: "assistant", content: first.choices[0]!.message.content }, { role: "user", content: "Two more." }];
    const second = await usageOf(await post(s, "/v1/chat/completions", { model, messages: turn2, max_tokens: 8 }));
    // Turn 1's prompt is a prefix of turn 2's: every full block of it is reused.
    expect(second.prompt_tokens_details.cached_tokens).toBe(Math.floor(first.usage.prompt_tokens / 4) * 4);
    expect(second.prompt_tokens).toBeGreaterThan(first.usage.prompt_tokens + 8);
  });

  it("evicts the least recently used idle blocks when full, and a prefix that lost its tail still hits its head", async () => {
    // 8 blocks. Each prompt is 2 full blocks + 1 byte (9 tokens); with 1 output token a
    // request holds 3 blocks while it runs and leaves 2 cached (its last token's block is partial).
    const s = await replica({ blockSize: 4, numGpuBlocks: 8 });
    for (const p of ["AA", "BB", "CC"]) expect(await cachedTokens(s, prompt(p))).toBe(0);
    expect(s.stats().kv).toMatchObject({ cachedBlocks: 6, idleCachedBlocks: 6, usedBlocks: 0, evictedBlocks: 0 });

    expect(await cachedTokens(s, prompt("AA"))).toBe(8); // A becomes the most recently used
    expect(await cachedTokens(s, prompt("DD"))).toBe(0); // takes the 2 free blocks and evicts B's tail
    expect(await cachedTokens(s, prompt("EE"))).toBe(0); // takes 1 free, evicts B's head and C's tail
    expect(s.stats().kv.evictedBlocks).toBe(3);

    expect(await cachedTokens(s, prompt("AA"))).toBe(8); // recently used: kept
    expect(await cachedTokens(s, prompt("CC"))).toBe(4); // head only: its tail was evicted
    expect(await cachedTokens(s, prompt("BB"))).toBe(0); // least recently used: gone
  });

  it("POST /reset_prefix_cache forgets idle blocks", async () => {
    const s = await replica({ blockSize: 4 });
    await cachedTokens(s, prompt("ab"));
    expect((await post(s, "/reset_prefix_cache", {})).status).toBe(200);
    expect(s.stats().kv.cachedBlocks).toBe(0);
    expect(await cachedTokens(s, prompt("ab"))).toBe(0);
  });
});

describe("scheduler and cost model", () => {
  it("times the first token as queueing + prefill_ms_per_token × uncached tokens, then decode_ms_per_token per token, FIFO", async () => {
    const prefillMsPerToken = 5;
    const decodeMsPerToken = 4;
    const s = await replica({ blockSize: 4, maxNumSeqs: 1, prefillMsPerToken, decodeMsPerToken, prefillOverheadMs: 10 });
    const p1 = prompt("pppppppppp"); // 41 tokens
    const p2 = prompt("qqqqqqqqqq");
    const [r1, r2] = await Promise.all([complete(s, p1, { max_tokens: 4 }), complete(s, p2, { max_tokens: 4 })]);
    await Promise.all([usageOf(r1), usageOf(r2)]);
    const [first, second] = [record(s, 1), record(s, 2)];

    for (const r of [first, second]) {
      expect(r.uncachedTokens).toBe(41);
      expect(r.firstTokenAt! - r.startAt!).toBeGreaterThanOrEqual(10 + prefillMsPerToken * 41 - JITTER_MS);
      expect(r.endAt! - r.firstTokenAt!).toBeGreaterThanOrEqual(3 * decodeMsPerToken - JITTER_MS); // tokens 2..4
    }
    // One slot: the second waited for the first to finish, and its TTFT includes that wait.
    expect(second.startAt!).toBeGreaterThanOrEqual(first.endAt!);
    expect(second.firstTokenAt! - second.arrivalAt).toBeGreaterThanOrEqual(first.endAt! - second.arrivalAt + 10 + prefillMsPerToken * 41 - JITTER_MS);

    // The same prompt again: 40 of its 41 tokens are cached, so its prefill is 5 ms instead of 205.
    await usageOf(await complete(s, p1, { max_tokens: 1 }));
    const cached = record(s, 3);
    expect(cached.cachedTokens).toBe(40);
    expect(cached.firstTokenAt! - cached.startAt!).toBeGreaterThanOrEqual(10 + prefillMsPerToken * 1 - JITTER_MS);
    expect(cached.firstTokenAt! - cached.arrivalAt).toBeLessThan(first.firstTokenAt! - first.arrivalAt);
  });

  it("shares the engine between prefills running at once: two cold prompts admitted together each take twice one's prefill", async () => {
    const prefillMsPerToken = 5;
    const s = await replica({ blockSize: 4, maxNumSeqs: 2, prefillMsPerToken, decodeMsPerToken: 1 });
    const [r1, r2] = await Promise.all([complete(s, prompt("pppppppppp"), { max_tokens: 1 }), complete(s, prompt("qqqqqqqqqq"), { max_tokens: 1 })]);
    await Promise.all([usageOf(r1), usageOf(r2)]);
    const alone = prefillMsPerToken * 41; // 41 uncached tokens each
    // Admitted `gap` ms apart (the two requests' arrivals, wider on a loaded machine), the
    // first runs alone for the gap, then both at half speed: each takes 2 × alone − gap.
    const gap = Math.abs(record(s, 2).startAt! - record(s, 1).startAt!);
    expect(gap).toBeLessThan(alone); // they did overlap
    for (const r of [record(s, 1), record(s, 2)]) {
      expect(r.uncachedTokens).toBe(41);
      // Neither independent (each done after 205 ms) nor one after the other (the first done after 205).
      expect(r.firstTokenAt! - r.startAt!).toBeGreaterThanOrEqual(2 * alone - gap - JITTER_MS);
    }
    // Alone again, the engine is all its own.
    await usageOf(await complete(s, prompt("rrrrrrrrrr"), { max_tokens: 1 }));
    const third = record(s, 3);
    expect(third.firstTokenAt! - third.startAt!).toBeGreaterThanOrEqual(alone - JITTER_MS);
    expect(third.firstTokenAt! - third.startAt!).toBeLessThan(2 * alone - JITTER_MS);
  });

  it("writes vLLM's inter-token latency histogram: a count per token after each first, the sum of their decode times", async () => {
    const s = await replica({ decodeMsPerToken: 5 });
    await usageOf(await complete(s, "x", { max_tokens: 5 }));
    await usageOf(await complete(s, "y", { max_tokens: 3 }));
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m").exec(metrics)?.[1]);
    expect(value("vllm:inter_token_latency_seconds_count")).toBe(4 + 2);
    const sum = value("vllm:inter_token_latency_seconds_sum");
    expect(sum).toBeGreaterThanOrEqual((6 * 5 - JITTER_MS) / 1000);
    expect(sum).toBeLessThan(1); // 30 ms of decoding, not wall time since start
  });

  it("slows each output token by decode_ms_per_extra_seq for every other running request", async () => {
    const s = await replica({ maxNumSeqs: 2, prefillMsPerToken: 1, decodeMsPerToken: 1, decodeMsPerExtraSeq: 20 });
    // A 10,000-token prompt keeps its request running (in prefill) for 10 s: the measured
    // request decodes beside it from its first token to its last.
    const holder = new AbortController();
    const held = complete(s, "h".repeat(40_000), {}, holder.signal).catch(() => undefined);
    await expect.poll(() => s.stats().running, POLL).toBe(1);
    await usageOf(await complete(s, "x", { max_tokens: 5 }));
    const measured = record(s, 2);
    expect(measured.endAt! - measured.firstTokenAt!).toBeGreaterThanOrEqual(4 * (1 + 20) - JITTER_MS);
    holder.abort();
    await held;
  });

  it("reports running, waiting and KV usage in /metrics, and a client that leaves frees its slot and blocks", async () => {
    const s = await replica({ blockSize: 4, numGpuBlocks: 64, maxNumSeqs: 2, decodeMsPerToken: HOLD_MS_PER_TOKEN });
    const labels = `{model_name="${s.stats().model}",engine="0"}`;
    // 9 tokens each: 3 blocks per running request.
    const { clients, settled } = await startInOrder(s, [prompt("AA"), prompt("BB"), prompt("CC")], { max_tokens: 10 });
    await expect.poll(() => [s.stats().running, s.stats().waiting], POLL).toEqual([2, 1]);

    let m = await metrics(s);
    expect(sample(m, `vllm:num_requests_running${labels}`)).toBe(2);
    expect(sample(m, `vllm:num_requests_waiting${labels}`)).toBe(1);
    expect(sample(m, `vllm:kv_cache_usage_perc${labels}`)).toBe(6 / 64);
    expect(m).toContain('vllm:cache_config_info{block_size="4",gpu_memory_utilization="0.9",cache_dtype="auto",enable_prefix_caching="True",num_gpu_blocks="64",num_cpu_blocks="None",engine="0"} 1.0');

    expect(s.stats().records.map((r) => r.outcome)).toEqual(["running", "running", "waiting"]);
    clients[0]!.abort();
    // The slot goes to the waiting request; the aborted one's blocks are freed (its 2 full blocks stay cached, idle).
    await expect.poll(() => record(s, 3).outcome, POLL).toBe("running");
    expect(record(s, 1).outcome).toBe("aborted");
    expect(s.stats()).toMatchObject({ running: 2, waiting: 0, kv: { usedBlocks: 6, idleCachedBlocks: 2 } });

    for (const c of clients) c.abort();
    await settled;
    await expect.poll(() => s.stats().running, POLL).toBe(0);
    m = await metrics(s);
    expect(sample(m, `vllm:kv_cache_usage_perc${labels}`)).toBe(0);
    expect(s.stats().records.map((r) => r.outcome)).toEqual(["aborted", "aborted", "aborted"]);
  });

  it("takes a request that left the waiting queue out of it", async () => {
    const s = await replica({ maxNumSeqs: 1, decodeMsPerToken: HOLD_MS_PER_TOKEN });
    const holder = new AbortController();
    const waiter = new AbortController();
    const held = complete(s, "holder", { max_tokens: 2, stream: true }, holder.signal).catch(() => undefined);
    await expect.poll(() => s.stats().running, POLL).toBe(1);
    const waiting = complete(s, "waiter", { max_tokens: 2 }, waiter.signal).catch(() => undefined);
    await expect.poll(() => s.stats().waiting, POLL).toBe(1);
    waiter.abort();
    await waiting;
    await expect.poll(() => s.stats().waiting, POLL).toBe(0);
    expect(record(s, 2)).toMatchObject({ outcome: "aborted", startAt: null });
    holder.abort();
    await held;
  });

  it("makes a request wait while the KV cache cannot hold it, even with a free slot, in FIFO order", async () => {
    // 8 blocks; each request needs 3 (9 prompt + up to 3 output tokens), so two run and the third waits.
    const s = await replica({ blockSize: 4, numGpuBlocks: 8, maxNumSeqs: 10, decodeMsPerToken: HOLD_MS_PER_TOKEN });
    const { clients, settled } = await startInOrder(s, [prompt("AA"), prompt("BB"), prompt("CC")], { max_tokens: 3 });
    await expect.poll(() => [s.stats().running, s.stats().waiting], POLL).toEqual([2, 1]);
    expect(s.stats().kv.usedBlocks).toBe(6); // prompts' blocks; the 2 left are promised to the running requests' output
    clients[1]!.abort();
    await expect.poll(() => record(s, 3).outcome, POLL).toBe("running");
    for (const c of clients) c.abort();
    await settled;
  });
});

describe("streaming", () => {
  it("sends the role, one chunk per token and [DONE]; usage last when asked; the same text as unstreamed", async () => {
    const s = await replica({});
    const model = s.stats().model;
    const messages = [{ role: "user", content: "stream please" }];
    const events = await sseEvents(await post(s, "/v1/chat/completions", { model, messages, max_tokens: 5, stream: true, stream_options: { include_usage: true } }));
    expect(events).toHaveLength(1 + 5 + 1 + 1); // role, 5 tokens, usage, [DONE]
    expect(events.at(-1)).toBe("[DONE]");
    type Chunk = { object: string; choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[]; usage?: Usage };
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.slice(1, 6).map((c) => c.choices[0]!.finish_reason)).toEqual([null, null, null, null, "length"]);
    expect(chunks[6]!.choices).toEqual([]);
    expect(chunks[6]!.usage).toMatchObject({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } });

    const plain = (await (await post(s, "/v1/chat/completions", { model, messages, max_tokens: 5 })).json()) as { choices: { message: { content: string } }[]; usage: Usage };
    expect(chunks.slice(1, 6).map((c) => c.choices[0]!.delta.content).join("")).toBe(plain.choices[0]!.message.content);
  });

  it("groups stream_tokens_per_chunk tokens per chunk, sends no usage unless asked, and stops at the output cap", async () => {
    const s = await replica({ streamTokensPerChunk: 2, maxOutputTokens: 5, defaultOutputTokens: 3 });
    const events = await sseEvents(await complete(s, "abc", { max_tokens: 100, stream: true }));
    const texts = events.slice(0, -1).map((e) => (JSON.parse(e) as { choices: { text: string }[] }).choices[0]!.text);
    expect(texts.map((t) => t.length / 4)).toEqual([1, 2, 2]); // the first token alone (after prefill), then pairs: 5 = the cap
    expect(events.some((e) => e.includes('"usage"'))).toBe(false);
    const finish = (await (await complete(s, "abc", { max_tokens: undefined })).json()) as { usage: Usage; choices: { finish_reason: string }[] };
    expect(finish.usage.completion_tokens).toBe(3); // no max_tokens: the default
    expect(finish.choices[0]!.finish_reason).toBe("stop");
  });
});

describe("LoRA adapters", () => {
  it("lists the base model and its adapters", async () => {
    const s = await replica({ model: "base-8b", loras: ["sql", "chat"] });
    const list = (await (await fetch(`${s.url}/v1/models`)).json()) as { data: { id: string; parent: string | null }[] };
    expect(list.data.map((m) => [m.id, m.parent])).toEqual([
      ["base-8b", null],
      ["sql", "base-8b"],
      ["chat", "base-8b"],
    ]);
  });

  it("charges lora_load_ms to a request whose adapter is not loaded, not to the next one", async () => {
    const loraLoadMs = 150;
    const s = await replica({ loras: ["sql"], loraLoadMs });
    await usageOf(await complete(s, "select", { model: "sql" }));
    await usageOf(await complete(s, "select", { model: "sql" }));
    const [cold, warm] = [record(s, 1), record(s, 2)];
    expect(cold).toMatchObject({ lora: "sql", loraLoaded: true });
    expect(cold.firstTokenAt! - cold.startAt!).toBeGreaterThanOrEqual(loraLoadMs - JITTER_MS);
    expect(warm.loraLoaded).toBe(false);
    expect(warm.firstTokenAt! - warm.arrivalAt).toBeLessThan(cold.firstTokenAt! - cold.arrivalAt);
    expect(s.stats().lora).toEqual({ loaded: ["sql"], loads: 1, evictions: 0 });
  });

  it("makes a request wait while every adapter slot is busy, lets others past it, and shows it in vllm:lora_requests_info", async () => {
    const s = await replica({ loras: ["a", "b"], maxLora: 1, decodeMsPerToken: HOLD_MS_PER_TOKEN });
    const onA = new AbortController();
    const heldA = complete(s, "on a", { model: "a", max_tokens: 2, stream: true }, onA.signal).catch(() => undefined);
    await expect.poll(() => s.stats().running, POLL).toBe(1);
    const b = complete(s, "on b", { model: "b", max_tokens: 1 });
    await expect.poll(() => s.stats().waiting, POLL).toBe(1);
    // The base model needs no adapter slot: it runs past the waiting request (vLLM skips, it does not block).
    await usageOf(await complete(s, "base", { max_tokens: 1 }));
    expect(s.stats().waiting).toBe(1);

    const before = Date.now() / 1000;
    const m = await metrics(s);
    const series = m.split("\n").filter((l) => l.startsWith("vllm:lora_requests_info{"));
    const newest = series.map((l) => ({ line: l, at: Number(l.split(" ").at(-1)) })).reduce((x, y) => (y.at > x.at ? y : x));
    expect(newest.line).toMatch(/^vllm:lora_requests_info\{max_lora="1",waiting_lora_adapters="b",running_lora_adapters="a"\} \d\.\d+e\+09$/);
    expect(newest.at).toBeGreaterThan(before - 60); // a recent epoch-seconds timestamp, as set_to_current_time writes
    expect(newest.at).toBeLessThanOrEqual(Date.now() / 1000);

    onA.abort(); // a's request leaves: a is evicted, b loads
    await usageOf(await b);
    await heldA;
    expect(s.stats().lora).toEqual({ loaded: ["b"], loads: 2, evictions: 1 });
  });

  it("evicts the least recently used idle adapter when all max_lora slots are taken", async () => {
    const s = await replica({ loras: ["a", "b", "c"], maxLora: 2, loraLoadMs: 1 });
    for (const model of ["a", "b", "a", "c"]) await usageOf(await complete(s, "x", { model }));
    expect(s.stats().lora).toEqual({ loaded: ["a", "c"], loads: 3, evictions: 1 }); // b was least recently used
    expect(record(s, 3).loraLoaded).toBe(false);
    expect(record(s, 4).loraLoaded).toBe(true);
    expect(await metrics(s)).toContain('vllm:lora_requests_info{max_lora="2",waiting_lora_adapters="",running_lora_adapters="c"}');
  });

  it("writes no vllm:lora_requests_info without adapters", async () => {
    const s = await replica({});
    await usageOf(await complete(s, "x"));
    expect(await metrics(s)).not.toContain("vllm:lora_requests_info");
  });
});

describe("health and stats", () => {
  it("answers /health 200 until tuned unhealthy, and resetStats clears the records but not the cache", async () => {
    const s = await replica({ blockSize: 4 });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    s.tune({ healthy: false });
    expect((await fetch(`${s.url}/health`)).status).toBe(503);
    expect(() => s.tune({ decodeMsPerToken: -1 })).toThrow(/decodeMsPerToken/);
    expect(() => s.tune({ maxNumSeqs: 3 } as never)).toThrow(/unknown tuning field/);

    await cachedTokens(s, prompt("ab"));
    const overHttp = (await (await fetch(`${s.url}/fake/stats`)).json()) as { records: unknown[] };
    expect(overHttp.records).toHaveLength(1);
    await post(s, "/fake/reset", {});
    expect(s.stats().records).toEqual([]);
    expect(await cachedTokens(s, prompt("ab"))).toBe(8);
    expect(s.stats().records.map((r) => r.seq)).toEqual([2]);
  });

  it("serves /metrics live, frozen at the moment it was tuned, or failing with 503, and counts every read", async () => {
    const s = await replica({ blockSize: 4 });
    const queriesLine = async () => (await metrics(s)).split("\n").find((l) => l.startsWith("vllm:prefix_cache_queries_total"));
    const before = await queriesLine();
    s.tune({ metrics: "frozen" });
    await usageOf(await complete(s, prompt("ab")));
    expect(await queriesLine()).toBe(before); // the request is invisible: the numbers are as of the freeze
    expect(s.stats().options.metrics).toBe("frozen");

    s.tune({ metrics: "failing" });
    const failed = await fetch(`${s.url}/metrics`);
    expect(failed.status).toBe(503);
    await failed.text();

    s.tune({ metrics: "live" });
    expect(await queriesLine()).not.toBe(before); // live again: the request's prompt tokens show
    s.tune({ metrics: "frozen" });
    expect(await queriesLine()).not.toBe(before); // a new freeze takes a new snapshot
    expect(s.stats().metricsReads).toBe(5);
    expect(() => s.tune({ metrics: "stale" as never })).toThrow(/metrics must be one of live, frozen, failing/);
    await expect(startFakeVllm({ metrics: "frozen" } as never)).rejects.toThrow(/unknown option "metrics"/);
  });

  it("refuses unknown and out-of-range options at start", async () => {
    await expect(startFakeVllm({ blockSize: 0 })).rejects.toThrow(/blockSize/);
    await expect(startFakeVllm({ lora: ["a"] } as never)).rejects.toThrow(/unknown option "lora"/);
    await expect(startFakeVllm({ loras: ["a,b"] })).rejects.toThrow(/lora name/);
  });
});
