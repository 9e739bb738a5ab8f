/**
 * The fake metered provider on its own, over real HTTP: token counts and usage objects,
 * the prompt cache, TTFT and pace, the seeded slow tail, the concurrency limit, the quota
 * and its usage API, client aborts and billing, and fleet control's /providers routes.
 * Timings assert lower bounds with a little slack, and upper bounds only far away: a
 * loaded 2-core machine fires timers late, never much early.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeProvider, type FakeProvider, type FakeProviderBehaviour, type ProviderUsageReport } from "../../tools/fakes/fake-provider";
import { startFleetControl } from "../../tools/fakes/fleet-control";

const EARLY_MS = 10; // a timer may fire a little before performance.now() says it is due
const LATE_MS = 1_500; // upper bounds catch "ignored the knob", not a slow machine
const POLL = { timeout: 10_000, interval: 10 };
const HOLD_MS = 60_000; // a TTFT no test waits out: requests stay in progress until aborted

const providers: FakeProvider[] = [];
afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()));
});

async function provider(b: FakeProviderBehaviour = {}): Promise<FakeProvider> {
  const p = await startFakeProvider({ behaviour: b });
  providers.push(p);
  return p;
}

type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };
type ChatBody = { choices: { message: { content: string }; finish_reason: string }[]; usage: Usage };

function post(p: FakeProvider, path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${p.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
}

function chat(p: FakeProvider, messages: { role: string; content: unknown }[], extra: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Response> {
  return post(p, "/v1/chat/completions", { model: "m", messages, ...extra }, signal);
}

const user = (content: string) => [{ role: "user", content }];

async function chatBody(res: Response): Promise<ChatBody> {
  expect(res.status).toBe(200);
  return (await res.json()) as ChatBody;
}

/** The `data:` payloads of an SSE body, read to its end. */
async function events(res: Response): Promise<string[]> {
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  return (await res.text()).split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
}

async function usageApi(p: FakeProvider, path = "/usage", key?: string): Promise<Response> {
  return fetch(`${p.url}${path}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
}

async function errorOf(res: Response): Promise<{ message: string; type: string; code: string }> {
  return ((await res.json()) as { error: { message: string; type: string; code: string } }).error;
}

describe("tokens and usage", () => {
  it("counts prompt tokens as ceil(characters of every message content / 4) and output tokens as min(max_tokens, outputTokens)", async () => {
    const p = await provider({ outputTokens: 8 });
    const messages = [{ role: "system", content: "x".repeat(20) }, { role: "user", content: [{ type: "text", text: "y".repeat(21) }] }]; // 41 characters
    const full = await chatBody(await chat(p, messages));
    expect(full.usage).toEqual({ prompt_tokens: 11, completion_tokens: 8, total_tokens: 19, prompt_tokens_details: { cached_tokens: 0 } });
    expect(full.choices[0]!.message.content.trim().split(" ")).toHaveLength(8);
    expect(full.choices[0]!.finish_reason).toBe("stop");

    const capped = await chatBody(await chat(p, messages, { max_tokens: 3 }));
    expect(capped.usage.completion_tokens).toBe(3);
    expect(capped.choices[0]!.finish_reason).toBe("length");
    expect((await chatBody(await chat(p, messages, { max_completion_tokens: 5 }))).usage.completion_tokens).toBe(5);
    expect((await chatBody(await chat(p, messages, { max_tokens: 100 }))).usage.completion_tokens).toBe(8); // asks for more than it would say

    const completion = await post(p, "/v1/completions", { model: "m", prompt: "z".repeat(8), max_tokens: 2 });
    expect(((await completion.json()) as { usage: Usage }).usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
    expect((await chatBody(await chat(await provider(), user("hi")))).usage.completion_tokens).toBe(32); // the default

    const stats = p.stats();
    expect(stats.tokens).toEqual({ prompt: 11 * 4 + 2, completion: 8 + 3 + 5 + 8 + 2, cached: 0 });
    expect(stats.completed).toBe(5);
  });

  it("reports cacheRatio of the prompt as cached when the first message's content was seen before", async () => {
    const p = await provider({ cacheRatio: 0.5, outputTokens: 1 });
    const system = { role: "system", content: "s".repeat(40) }; // 10 tokens
    const cached = async (messages: { role: string; content: unknown }[]) => (await chatBody(await chat(p, messages))).usage.prompt_tokens_details.cached_tokens;
    expect(await cached([system, { role: "user", content: "a".repeat(4) }])).toBe(0); // 11 tokens, first sight
    expect(await cached([system, { role: "user", content: "b".repeat(8) }])).toBe(6); // 12 tokens, same first message: floor(12 × 0.5)
    expect(await cached([{ role: "system", content: "other" }, { role: "user", content: "a".repeat(4) }])).toBe(0);
    expect(p.stats().tokens.cached).toBe(6);

    expect((await chatBody(await chat(await provider({ outputTokens: 1 }), [system]))).usage.prompt_tokens_details.cached_tokens).toBe(0); // cacheRatio 0
  });

  it("streams one chunk per token, then the finish chunk, a usage chunk with include_usage, and [DONE]", async () => {
    const p = await provider({ outputTokens: 5 });
    const withUsage = await events(await chat(p, user("q".repeat(12)), { stream: true, stream_options: { include_usage: true } }));
    expect(withUsage.at(-1)).toBe("[DONE]");
    const chunks = withUsage.slice(0, -1).map((e) => JSON.parse(e) as { object: string; choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[]; usage?: Usage | null });
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    const content = chunks.filter((c) => c.choices[0]?.delta.content);
    expect(content).toHaveLength(5);
    expect(content.every((c) => /^[a-z]+ $/.test(c.choices[0]!.delta.content!))).toBe(true);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8, prompt_tokens_details: { cached_tokens: 0 } });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true); // as OpenAI: null until the usage chunk

    const without = await events(await chat(p, user("q"), { stream: true, max_tokens: 2 }));
    expect(without.at(-1)).toBe("[DONE]");
    expect(without.some((e) => e.includes('"usage"'))).toBe(false);
    expect(JSON.parse(without.at(-2)!).choices[0].finish_reason).toBe("length");

    const completion = await events(await post(p, "/v1/completions", { model: "m", prompt: "abcd", stream: true, max_tokens: 3, stream_options: { include_usage: true } }));
    const texts = completion.slice(0, -1).map((e) => JSON.parse(e) as { choices: { text: string }[]; usage?: Usage | null });
    expect(texts.filter((c) => c.choices[0]?.text)).toHaveLength(3);
    expect(texts.at(-1)!.usage).toMatchObject({ prompt_tokens: 1, completion_tokens: 3 });
    expect(p.stats().tokens).toEqual({ prompt: 3 + 1 + 1, completion: 5 + 2 + 3, cached: 0 });
  });

  it("refuses a bad body or max_tokens with 400, an unknown route with 404; answers /health and /v1/models", async () => {
    const p = await provider({ model: "gpt-fake" });
    expect((await chat(p, user("x"), { max_tokens: 0 })).status).toBe(400);
    expect((await post(p, "/v1/chat/completions", { model: "m" })).status).toBe(400);
    expect((await fetch(`${p.url}/v1/chat/completions`, { method: "POST", body: "{nope" })).status).toBe(400);
    expect((await post(p, "/v1/embeddings", { input: "x" })).status).toBe(404);
    expect((await fetch(`${p.url}/health`)).status).toBe(200);
    expect(((await (await fetch(`${p.url}/v1/models`)).json()) as { data: { id: string }[] }).data[0]!.id).toBe("gpt-fake");
    p.setBehaviour({ healthy: false });
    expect((await fetch(`${p.url}/health`)).status).toBe(503);
    expect(() => p.setBehaviour({ slowFraction: 2 })).toThrow(/slowFraction/);
    await expect(startFakeProvider({ behaviour: { concurrencyLimit: -1 } })).rejects.toThrow(/concurrencyLimit/);
  });
});

describe("latency", () => {
  it("sends a stream's first chunk after ttftMs and one token every msPerToken", async () => {
    const p = await provider({ ttftMs: 200, msPerToken: 30, outputTokens: 6 });
    const t0 = performance.now();
    const res = await chat(p, user("hi"), { stream: true });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const arrivals: number[] = []; // when each content chunk arrived
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const now = performance.now();
      text += decoder.decode(value, { stream: true });
      const count = (text.match(/"content":"[a-z]+ "/g) ?? []).length;
      while (arrivals.length < count) arrivals.push(now);
    }
    expect(arrivals).toHaveLength(6);
    expect(arrivals[0]! - t0).toBeGreaterThanOrEqual(200 - EARLY_MS);
    expect(arrivals[0]! - t0).toBeLessThan(200 + LATE_MS);
    // The last token cannot come before ttft + 5 more tokens' time. (The gap from the first chunk can look
    // shorter than 5 × 30 ms under load: a first chunk read late shortens it, so the bound is from t0.)
    expect(arrivals[5]! - t0).toBeGreaterThanOrEqual(200 + 5 * 30 - EARLY_MS);
    expect(arrivals[5]! - arrivals[0]!).toBeLessThan(5 * 30 + LATE_MS);
  });

  it("answers a non-streamed request after ttftMs + tokens × msPerToken", async () => {
    const p = await provider({ ttftMs: 200, msPerToken: 20, outputTokens: 5 });
    const t0 = performance.now();
    const res = await chat(p, user("hi"));
    const headersAt = performance.now() - t0;
    await chatBody(res);
    expect(headersAt).toBeGreaterThanOrEqual(200 + 5 * 20 - EARLY_MS);
    expect(headersAt).toBeLessThan(300 + LATE_MS);
  });

  it("with a seed, draws the same slow requests and jitter on every run; another seed draws others", async () => {
    const behaviour = { ttftMs: 5, jitterMs: 10, slowFraction: 0.3, slowTtftMs: 40, outputTokens: 1, seed: 42 };
    const run = async (p: FakeProvider) => {
      for (let i = 0; i < 20; i++) await chatBody(await chat(p, user(`q${i}`)));
      return p.stats().recent.map((r) => r.call!);
    };
    const [a, b, c] = [await provider(behaviour), await provider(behaviour), await provider({ ...behaviour, seed: 7 })];
    const [ra, rb, rc] = [await run(a), await run(b), await run(c)];
    const pattern = (calls: typeof ra) => calls.map((x) => (x.slow ? "S" : ".")).join("");
    expect(pattern(rb)).toBe(pattern(ra));
    expect(rb.map((x) => x.ttftMs)).toEqual(ra.map((x) => x.ttftMs));
    expect(pattern(ra)).toMatch(/S/);
    expect(pattern(ra)).toMatch(/\./);
    expect(pattern(rc)).not.toBe(pattern(ra));
    for (const x of ra) {
      const base = x.slow ? 40 : 5;
      expect(x.ttftMs).toBeGreaterThanOrEqual(base);
      expect(x.ttftMs).toBeLessThan(base + 10);
    }
    expect(a.stats().slow).toBe(ra.filter((x) => x.slow).length);
    expect(new Set(ra.map((x) => x.ttftMs)).size).toBeGreaterThan(10); // jitter varies per request

    // setBehaviour restarts the draws from the seed.
    a.setBehaviour(behaviour);
    a.resetStats();
    expect(pattern(await run(a))).toBe(pattern(ra));
  });

  it("gives slow requests slowTtftMs as their time to first byte", async () => {
    const p = await provider({ ttftMs: 0, slowFraction: 1, slowTtftMs: 250, outputTokens: 1 });
    const t0 = performance.now();
    await chatBody(await chat(p, user("x")));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(250 - EARLY_MS);
    expect(p.stats().recent[0]!.call).toMatchObject({ slow: true, ttftMs: 250 });
  });
});

describe("concurrency limit", () => {
  it("answers 429 concurrency_limit_exceeded past the limit, records the peak, and frees slots when clients leave", async () => {
    const p = await provider({ concurrencyLimit: 2, ttftMs: HOLD_MS, outputTokens: 1 });
    const holders = [new AbortController(), new AbortController()];
    const held = holders.map((h) => chat(p, user("hold"), {}, h.signal).catch(() => "aborted"));
    await expect.poll(() => p.stats().inFlight, POLL).toBe(2);

    const refused = await chat(p, user("one more"));
    expect(refused.status).toBe(429);
    expect(await errorOf(refused)).toMatchObject({ type: "rate_limit_error", code: "concurrency_limit_exceeded" });
    expect(p.stats()).toMatchObject({ inFlight: 2, peakInFlight: 2, rateLimited: 1, concurrencyRejected: 1, quotaRejected: 0 });
    expect(p.stats().recent.at(-1)).toMatchObject({ status: 429, call: null });

    for (const h of holders) h.abort();
    expect(await Promise.all(held)).toEqual(["aborted", "aborted"]);
    await expect.poll(() => p.stats().inFlight, POLL).toBe(0);
    p.setBehaviour({ concurrencyLimit: 2, outputTokens: 1 });
    expect((await chat(p, user("now"))).status).toBe(200);
    expect(p.stats()).toMatchObject({ peakInFlight: 2, aborted: 2, completed: 1, rateLimited: 1 });
  });

  it("never refuses without a limit, and peakInFlight counts what ran at once", async () => {
    const p = await provider({ ttftMs: 150, outputTokens: 1 });
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => chat(p, user(`c${i}`))));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(p.stats().peakInFlight).toBeGreaterThanOrEqual(2); // 150 ms each: they overlap
    expect(p.stats().rateLimited).toBe(0);
  });
});

describe("quota and the usage API", () => {
  it("bills prompt + completion tokens to the window and answers 429 insufficient_quota once used >= limit", async () => {
    const p = await provider({ quotaLimit: 50, outputTokens: 10 });
    for (let i = 0; i < 3; i++) expect((await chat(p, user("w".repeat(40)))).status).toBe(200); // 20 tokens each; the third starts at 40 < 50
    const refused = await chat(p, user("w"));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await errorOf(refused)).toMatchObject({ type: "insufficient_quota", code: "insufficient_quota" });
    expect(p.stats()).toMatchObject({ rateLimited: 1, quotaRejected: 1, concurrencyRejected: 0, quota: { used: 60, limit: 50 } });

    const before = Date.now() / 1000;
    const report = (await (await usageApi(p)).json()) as ProviderUsageReport;
    expect(Object.keys(report)).toEqual(["data"]);
    expect(Object.keys(report.data).sort()).toEqual(["limit", "reset_at", "used", "window_seconds"]);
    expect(report.data).toMatchObject({ used: 60, limit: 50, window_seconds: 3600 });
    expect(report.data.reset_at).toBeGreaterThan(before);
    expect(report.data.reset_at).toBeLessThanOrEqual(before + 3600 + 1);
    expect(await (await usageApi(p, "/v1/usage")).json()).toEqual(report);
  });

  it("lets the controller set the window's use, as another consumer of the subscription would", async () => {
    const p = await provider({ quotaLimit: 100, outputTokens: 1 });
    p.setUsed(100);
    expect((await chat(p, user("x"))).status).toBe(429);
    p.setUsed(99);
    expect((await chat(p, user("x"))).status).toBe(200); // 99 < 100: admitted, and billed 1 + 1
    expect(((await (await usageApi(p)).json()) as ProviderUsageReport).data.used).toBe(101);
    expect((await chat(p, user("x"))).status).toBe(429);
  });

  it("starts a new window at reset_at with nothing used", async () => {
    const p = await provider({ quotaLimit: 10 });
    p.setUsed(10);
    expect((await chat(p, user("x"))).status).toBe(429);
    // Windows count from the server's start; a 50 ms window has rolled by the next read.
    await new Promise((r) => setTimeout(r, 60));
    p.setBehaviour({ quotaLimit: 10, quotaWindowMs: 50, outputTokens: 1 });
    const { data } = (await (await usageApi(p)).json()) as ProviderUsageReport;
    expect(data.window_seconds).toBe(0.05);
    expect(data.used).toBe(0);
    expect(data.reset_at - data.window_seconds).toBeLessThanOrEqual(Date.now() / 1000);
    expect((await chat(p, user("x"))).status).toBe(200);
  });

  it("requires the usage key when one is set, and answers 503 when usageDown", async () => {
    const p = await provider({ quotaLimit: 10, usageKey: "uk-1" });
    expect((await usageApi(p)).status).toBe(401);
    expect((await usageApi(p, "/usage", "wrong")).status).toBe(401);
    expect((await usageApi(p, "/v1/usage", "wrong")).status).toBe(401);
    expect((await usageApi(p, "/usage", "uk-1")).status).toBe(200);
    expect((await usageApi(p, "/v1/usage", "uk-1")).status).toBe(200);
    expect((await usageApi(await provider({ quotaLimit: 10 }))).status).toBe(200); // no key set: open

    p.setBehaviour({ quotaLimit: 10, usageKey: "uk-1", usageDown: true, outputTokens: 1 });
    expect((await usageApi(p, "/usage", "uk-1")).status).toBe(503);
    expect((await usageApi(p, "/v1/usage", "uk-1")).status).toBe(503);
    expect((await chat(p, user("x"))).status).toBe(200); // the model API is up
  });
});

describe("client aborts", () => {
  it("counts a stream whose client leaves as aborted and bills only the tokens generated", async () => {
    const p = await provider({ msPerToken: 100, outputTokens: 50 });
    const client = new AbortController();
    const res = await chat(p, user("abcd".repeat(5)), { stream: true }, client.signal);
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk
    client.abort();
    await expect.poll(() => p.stats().aborted, POLL).toBe(1);
    const stats = p.stats();
    expect(stats).toMatchObject({ completed: 0, inFlight: 0 });
    const call = stats.recent[0]!.call!;
    expect(call.outcome).toBe("aborted");
    expect(call.completionTokens).toBeGreaterThanOrEqual(1);
    expect(call.completionTokens).toBeLessThan(50);
    expect(stats.quota.used).toBe(5 + call.completionTokens);
  });

  it("counts a non-streamed request whose client leaves during its TTFT as aborted, billing its prompt only", async () => {
    const p = await provider({ ttftMs: HOLD_MS, quotaLimit: 1000 });
    const client = new AbortController();
    const pending = chat(p, user("abcd"), {}, client.signal).catch(() => "aborted");
    await expect.poll(() => p.stats().inFlight, POLL).toBe(1);
    client.abort();
    expect(await pending).toBe("aborted");
    await expect.poll(() => p.stats().aborted, POLL).toBe(1);
    expect(p.stats()).toMatchObject({ completed: 0, inFlight: 0, tokens: { prompt: 1, completion: 0 }, quota: { used: 1 } });
    expect(p.stats().recent[0]).toMatchObject({ status: null, call: { outcome: "aborted", completionTokens: 0 } });
  });
});

describe("fleet control", () => {
  it("spawns, steers, reads and closes providers over /providers", async () => {
    const fleet = await startFleetControl();
    try {
      const ctl = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(fleet.url + path, { method, headers: { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      const created = await ctl("POST", "/providers", { id: "p1", behaviour: { quotaLimit: 10, outputTokens: 1 } });
      expect(created.status).toBe(201);
      const url = created.body.url as string;
      expect((await ctl("POST", "/providers", { id: "p1" })).status).toBe(409);
      expect((await ctl("POST", "/providers", { behaviour: { cacheRatio: 3 } })).status).toBe(400);

      expect((await ctl("PUT", "/providers/p1/used", { used: 10 })).status).toBe(200);
      const send = () => fetch(`${url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ messages: user("x") }) });
      expect((await send()).status).toBe(429);
      expect((await ctl("PUT", "/providers/p1/behaviour", { outputTokens: 1 })).status).toBe(200); // no quota now
      expect((await send()).status).toBe(200);
      expect((await ctl("PUT", "/providers/p1/used", { used: -1 })).status).toBe(400);

      const stats = await ctl("GET", "/providers/p1/stats");
      expect(stats.body).toMatchObject({ id: "p1", rateLimited: 1, completed: 1 });
      expect((await ctl("POST", "/providers/p1/reset")).status).toBe(200);
      expect((await ctl("GET", "/providers/p1/stats")).body).toMatchObject({ requests: 0, rateLimited: 0 });

      expect((await ctl("DELETE", "/providers/p1")).status).toBe(200);
      expect((await ctl("GET", "/providers/p1/stats")).status).toBe(404);
      await expect(fetch(`${url}/health`)).rejects.toThrow();
    } finally {
      await fleet.close();
    }
  });
});
