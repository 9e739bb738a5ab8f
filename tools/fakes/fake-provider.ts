/**
 * A fake metered LLM provider (Node only) for RouteWise's tests and bench: an
 * OpenAI-compatible server that behaves like a paid API. It has a time to first byte
 * with jitter and a slow tail (seeded, so runs repeat), a pace per output token, a
 * prompt cache that reports cached tokens, a concurrency limit and a token quota per
 * fixed window (both answered with OpenAI's 429 bodies), and a usage API reporting the
 * quota (GET /usage). Tokens are billed as they are generated: prompt tokens on
 * admission, output tokens on the generation timeline (token i at ttft + i × msPerToken),
 * so a client that leaves early (a hedge's loser) still pays for what was generated.
 *
 * Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,
 * GET /usage and GET /v1/usage.
 */
import http from "node:http";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { FAKE_MAX_BODY_BYTES, listenOnLoopback, readBody } from "./loopback";
import type {
  FakeProvider,
  FakeProviderBehaviour,
  FakeProviderOptions,
  FakeProviderStats,
  ProviderCall,
  ProviderRequestRecord,
  ProviderUsageReport,
} from "./fake-provider-types";

export type {
  FakeProvider,
  FakeProviderBehaviour,
  FakeProviderOptions,
  FakeProviderStats,
  ProviderCall,
  ProviderOutcome,
  ProviderRequestRecord,
  ProviderUsageReport,
} from "./fake-provider-types";

const RECENT_REQUESTS_KEPT = 50; // as fake-openai: enough to assert on headers, bounded memory
const DEFAULT_OUTPUT_TOKENS = 32;
const DEFAULT_QUOTA_WINDOW_MS = 3_600_000;
const DEFAULT_SEED = 1;
const DEFAULT_MODEL = "fake-provider-model";
const CHARS_PER_TOKEN = 4;
const MAX_CHOICES = 128; // OpenAI's bound on `n`
const PROMPT_CACHE_ENTRIES = 10_000; // first-message contents remembered; the oldest is forgotten first
// One short word per output token, in order: deterministic text that draws nothing from the PRNG.
const WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran"];

type Json = Record<string, unknown>;
type Kind = "chat" | "completion";

interface Ask {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  promptTokens: number;
  /** The first message's content (chat) or the prompt (completions): the prompt cache's key. */
  cacheKey: string;
  /** Output tokens per choice. */
  planned: number;
  /** Choices asked for (`n`): each is generated and billed. */
  choices: number;
  finish: "stop" | "length";
}

let nextAnonymousId = 1;

export async function startFakeProvider(opts: FakeProviderOptions = {}): Promise<FakeProvider> {
  const id = opts.id ?? `provider-${nextAnonymousId++}`;
  let behaviour = checkBehaviour(opts.behaviour ?? {});
  let random = mulberry32(behaviour.seed ?? DEFAULT_SEED);
  let stats = emptyStats(id);
  let active = 0; // admitted model requests in progress; survives resetStats, unlike the counters
  let seq = 0;
  const seen = new Set<string>(); // the prompt cache

  // The quota: fixed windows counted from the server's start.
  let windowStart = Date.now();
  let used = 0;
  const windowMs = () => behaviour.quotaWindowMs ?? DEFAULT_QUOTA_WINDOW_MS;
  function roll(now = Date.now()): void {
    const w = windowMs();
    if (now >= windowStart + w) {
      windowStart += Math.floor((now - windowStart) / w) * w;
      used = 0;
    }
  }
  const usageReport = (): ProviderUsageReport => {
    roll();
    return { data: { used, limit: behaviour.quotaLimit ?? 0, window_seconds: windowMs() / 1000, reset_at: behaviour.usageResetAt ?? (windowStart + windowMs()) / 1000 } };
  };

  const server = http.createServer({ noDelay: true }, (req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const counted = stats; // resetStats() must not let older requests skew the new counters
    counted.requests++;
    counted.byPath[path] = (counted.byPath[path] ?? 0) + 1;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : (v ?? "");
    const record: ProviderRequestRecord = { method: req.method ?? "", path, headers, body: "", at: Date.now(), status: null, call: null };
    counted.recent.push(record);
    if (counted.recent.length > RECENT_REQUESTS_KEPT) counted.recent.shift();
    res.setHeader("x-fake-provider", id);

    const send = (status: number, body: unknown, extra: Record<string, string> = {}) => {
      record.status = status;
      const text = JSON.stringify(body);
      res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...extra });
      res.end(text);
    };

    // Set before the body is read: a client that leaves mid-body must not be admitted.
    let closed = false;
    let onClose = () => {};
    res.on("close", () => {
      closed = true;
      onClose();
    });
    record.body = await readBody(req, FAKE_MAX_BODY_BYTES);
    const b = behaviour; // a snapshot: a behaviour change mid-request can't mix two configurations

    switch (`${req.method} ${path}`) {
      case "GET /health":
        return send(b.healthy === false ? 503 : 200, { status: b.healthy === false ? "unhealthy" : "ok" });
      case "GET /v1/models":
        return send(200, { object: "list", data: [{ id: b.model ?? DEFAULT_MODEL, object: "model", created: 0, owned_by: "switchyard-fake-provider" }] });
      case "GET /usage":
      case "GET /v1/usage":
        if (b.usageDown) return send(503, openAIError("The usage API is unavailable (fake: usageDown)", "server_error", "service_unavailable"));
        if (b.usageKey !== undefined && headers.authorization !== `Bearer ${b.usageKey}`) {
          return send(401, openAIError("Incorrect API key provided for the usage API", "invalid_request_error", "invalid_api_key"));
        }
        return send(200, b.usagePadBytes ? { ...usageReport(), padding: "x".repeat(b.usagePadBytes) } : usageReport());
      case "POST /v1/chat/completions":
        return complete("chat");
      case "POST /v1/completions":
        return complete("completion");
    }
    return send(404, openAIError(`No route ${req.method} ${path}`, "invalid_request_error", "not_found"));

    async function complete(kind: Kind): Promise<void> {
      let parsed: unknown;
      try {
        parsed = JSON.parse(record.body);
      } catch {
        return send(400, openAIError("Request body is not JSON", "invalid_request_error", "invalid_json"));
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        return send(400, openAIError("Request body must be a JSON object", "invalid_request_error", "invalid_json"));
      }
      const ask = parseAsk(kind, parsed as Json, b);
      if (typeof ask === "string") return send(400, openAIError(ask, "invalid_request_error", "invalid_request"));
      if (closed) return; // the client left before admission: nothing to run, nothing to bill

      roll();
      const quotaLimit = b.quotaLimit ?? 0;
      if (quotaLimit > 0 && used >= quotaLimit) {
        counted.rateLimited++;
        counted.quotaRejected++;
        const retryAfter = Math.max(1, Math.ceil((windowStart + windowMs() - Date.now()) / 1000));
        return send(429, openAIError(`You exceeded your current quota: ${used} of ${quotaLimit} tokens used in this window`, "insufficient_quota", "insufficient_quota"), {
          "retry-after": String(retryAfter),
        });
      }
      const concurrencyLimit = b.concurrencyLimit ?? 0;
      if (concurrencyLimit > 0 && active >= concurrencyLimit) {
        counted.rateLimited++;
        counted.concurrencyRejected++;
        return send(429, openAIError(`Too many concurrent requests: ${active} of ${concurrencyLimit} in progress`, "rate_limit_error", "concurrency_limit_exceeded"));
      }

      // Admitted. Two draws per admitted request, always, so one seed gives one sequence whatever the knobs.
      active++;
      counted.peakInFlight = Math.max(counted.peakInFlight, active);
      const slow = random() < (b.slowFraction ?? 0);
      const jitter = random() * (b.jitterMs ?? 0);
      const ttft = (slow ? (b.slowTtftMs ?? b.ttftMs ?? 0) : (b.ttftMs ?? 0)) + jitter;
      const msPerToken = b.msPerToken ?? 0;
      if (slow) counted.slow++;
      const cachedTokens = seen.has(ask.cacheKey) ? Math.floor(ask.promptTokens * (b.cacheRatio ?? 0)) : 0;
      remember(ask.cacheKey);
      const call: ProviderCall = {
        stream: ask.stream,
        slow,
        ttftMs: ttft,
        promptTokens: ask.promptTokens,
        cachedTokens,
        plannedTokens: ask.planned,
        completionTokens: 0,
        outcome: "running",
      };
      record.call = call;
      used += ask.promptTokens;
      counted.tokens.prompt += ask.promptTokens;
      counted.tokens.cached += cachedTokens;
      /** Bills output tokens up to `n` in all; never twice. */
      const billTo = (n: number) => {
        const more = n - call.completionTokens;
        if (more <= 0) return;
        roll();
        used += more;
        counted.tokens.completion += more;
        call.completionTokens = n;
      };

      const start = performance.now();
      const gone = new AbortController();
      onClose = () => {
        active--;
        if (res.writableFinished) {
          call.outcome = "completed";
          counted.completed++;
        } else {
          call.outcome = "aborted";
          counted.aborted++;
          // Generation went on until the client left: token i was ready at ttft + i × msPerToken.
          const elapsed = performance.now() - start;
          if (!ask.stream && elapsed >= ttft) billTo(ask.choices * (msPerToken > 0 ? Math.min(ask.planned, Math.floor((elapsed - ttft) / msPerToken) + 1) : ask.planned));
        }
        gone.abort();
      };
      const until = async (offsetMs: number) => {
        const wait = start + offsetMs - performance.now();
        if (wait > 0) await sleep(wait, undefined, { signal: gone.signal }).catch(() => {});
      };

      seq++;
      const base = { id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${id}-${seq}`, object: kind === "chat" ? "chat.completion" : "text_completion", created: Math.floor(Date.now() / 1000), model: ask.model };
      const usage = () => ({
        prompt_tokens: ask.promptTokens,
        completion_tokens: call.completionTokens,
        total_tokens: ask.promptTokens + call.completionTokens,
        prompt_tokens_details: { cached_tokens: cachedTokens },
      });

      if (!ask.stream) {
        await until(ttft + ask.planned * msPerToken);
        if (gone.signal.aborted) return;
        billTo(ask.planned * ask.choices);
        const text = Array.from({ length: ask.planned }, (_, i) => word(i)).join("");
        const choice = (index: number) => (kind === "chat" ? { index, message: { role: "assistant", content: text }, finish_reason: ask.finish } : { index, text, finish_reason: ask.finish });
        return send(200, { ...base, choices: Array.from({ length: ask.choices }, (_, i) => choice(i)), usage: usage() }, b.responseHeaders);
      }

      const chunkBase = { ...base, object: kind === "chat" ? "chat.completion.chunk" : "text_completion", ...(ask.includeUsage ? { usage: null } : {}) };
      const piece = (text: string, finish: string | null, index = 0) =>
        kind === "chat"
          ? { ...chunkBase, choices: [{ index, delta: finish ? {} : { content: text }, finish_reason: finish }] }
          : { ...chunkBase, choices: [{ index, text, finish_reason: finish }] };
      const sse = (event: unknown) => res.write(`data: ${JSON.stringify(event)}\n\n`);

      await until(ttft);
      if (gone.signal.aborted) return;
      record.status = 200;
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...b.responseHeaders });
      if (kind === "chat") sse({ ...chunkBase, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
      for (let i = 0; i < ask.planned; i++) {
        if (i > 0) await until(ttft + i * msPerToken);
        if (gone.signal.aborted) return;
        billTo((i + 1) * ask.choices);
        for (let c = 0; c < ask.choices; c++) sse(piece(word(i), null, c));
      }
      for (let c = 0; c < ask.choices; c++) sse(piece("", ask.finish, c));
      if (ask.includeUsage) sse({ ...chunkBase, choices: [], usage: usage() });
      res.end("data: [DONE]\n\n");
    }
  }

  function remember(key: string): void {
    seen.delete(key); // re-inserted as the newest
    seen.add(key);
    if (seen.size > PROMPT_CACHE_ENTRIES) seen.delete(seen.values().next().value as string);
  }

  const port = await listenOnLoopback(server, opts.port);

  return {
    id,
    port,
    url: `http://127.0.0.1:${port}`,
    setBehaviour(b) {
      behaviour = checkBehaviour(b);
      random = mulberry32(behaviour.seed ?? DEFAULT_SEED);
    },
    setUsed(n) {
      if (!Number.isFinite(n) || n < 0) throw new Error(`used must be a number >= 0, got ${n}`);
      roll();
      used = n;
    },
    stats: () => {
      const { data } = usageReport();
      return structuredClone({ ...stats, inFlight: active, quota: { used: data.used, limit: data.limit, resetAt: data.reset_at } });
    },
    resetStats() {
      stats = emptyStats(id);
      stats.peakInFlight = active;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections(); // running and keep-alive requests would otherwise hold close() open
      }),
  };
}

/** The request's token counts and shape, or a message for a 400. */
function parseAsk(kind: Kind, body: Json, b: FakeProviderBehaviour): Ask | string {
  let chars = 0;
  let cacheKey: string;
  if (kind === "chat") {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages must be a non-empty array";
    for (const m of body.messages as unknown[]) chars += contentChars((m as Json | null)?.content);
    const first = (body.messages[0] as Json | null)?.content;
    cacheKey = typeof first === "string" ? first : JSON.stringify(first ?? null);
  } else {
    const prompts = typeof body.prompt === "string" ? [body.prompt] : body.prompt;
    if (!Array.isArray(prompts) || prompts.length === 0 || !prompts.every((p) => typeof p === "string")) return "prompt must be a string or an array of strings";
    for (const p of prompts as string[]) chars += p.length;
    cacheKey = prompts[0] as string;
  }
  const asked = body.max_completion_tokens ?? body.max_tokens;
  if (asked !== undefined && asked !== null && (typeof asked !== "number" || !Number.isInteger(asked) || asked < 1)) {
    return "max_tokens must be an integer >= 1";
  }
  const n = body.n ?? 1;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > MAX_CHOICES) return `n must be an integer from 1 to ${MAX_CHOICES}`;
  const natural = b.outputTokens ?? DEFAULT_OUTPUT_TOKENS;
  const cap = typeof asked === "number" ? asked : Infinity;
  const options = body.stream_options as Json | null | undefined;
  return {
    model: typeof body.model === "string" ? body.model : (b.model ?? DEFAULT_MODEL),
    stream: body.stream === true,
    includeUsage: body.stream === true && options?.include_usage === true,
    promptTokens: Math.ceil(chars / CHARS_PER_TOKEN),
    cacheKey,
    planned: Math.min(cap, natural),
    choices: n,
    finish: cap < natural ? "length" : "stop",
  };
}

/** Characters of a message's content: a string, or the text parts of a parts array. */
function contentChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content as unknown[]) {
    const text = (part as Json | null)?.text;
    if (typeof text === "string") n += text.length;
  }
  return n;
}

function word(i: number): string {
  return `${WORDS[i % WORDS.length]} `;
}

/** Throws naming the first bad field; fleet control answers it as a 400. */
function checkBehaviour(b: FakeProviderBehaviour): FakeProviderBehaviour {
  if (typeof b !== "object" || b === null || Array.isArray(b)) throw new Error("behaviour must be an object");
  const num = (k: keyof FakeProviderBehaviour, ok: (v: number) => boolean, what: string) => {
    const v = b[k];
    if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || !ok(v))) throw new Error(`behaviour.${k} must be ${what}, got ${JSON.stringify(v)}`);
  };
  for (const k of ["ttftMs", "msPerToken", "jitterMs", "slowTtftMs"] as const) num(k, (v) => v >= 0, "a number >= 0");
  for (const k of ["slowFraction", "cacheRatio"] as const) num(k, (v) => v >= 0 && v <= 1, "a number in [0, 1]");
  for (const k of ["concurrencyLimit", "quotaLimit"] as const) num(k, (v) => Number.isInteger(v) && v >= 0, "an integer >= 0 (0: no limit)");
  num("outputTokens", (v) => Number.isInteger(v) && v >= 1, "an integer >= 1");
  num("quotaWindowMs", (v) => v > 0, "a number > 0");
  num("seed", () => true, "a number");
  num("usageResetAt", () => true, "a number");
  num("usagePadBytes", (v) => Number.isInteger(v) && v >= 0 && v <= 16_777_216, "an integer from 0 to 16777216");
  for (const k of ["usageKey", "model"] as const) {
    if (b[k] !== undefined && typeof b[k] !== "string") throw new Error(`behaviour.${k} must be a string`);
  }
  if (b.responseHeaders !== undefined) {
    const h = b.responseHeaders as unknown;
    if (typeof h !== "object" || h === null || Array.isArray(h) || !Object.values(h).every((v) => typeof v === "string")) throw new Error("behaviour.responseHeaders must be an object of strings");
  }
  return { ...b };
}

/** mulberry32, as test/support/seeded-random.ts: small, seedable, good enough for a fake's draws. Values in [0, 1). */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function openAIError(message: string, type: string, code: string) {
  return { error: { message, type, code } };
}

function emptyStats(id: string): FakeProviderStats {
  return {
    id,
    requests: 0,
    byPath: {},
    inFlight: 0,
    peakInFlight: 0,
    completed: 0,
    aborted: 0,
    rateLimited: 0,
    concurrencyRejected: 0,
    quotaRejected: 0,
    slow: 0,
    tokens: { prompt: 0, completion: 0, cached: 0 },
    quota: { used: 0, limit: 0, resetAt: 0 },
    recent: [],
  };
}
