/**
 * A fake OpenAI-compatible model server (Node only) for tests, the local demo and
 * benchmarks. Behaviour can be changed at runtime so a test can make an upstream slow,
 * failing, hung or cut off mid-stream without restarting it.
 */
import http from "node:http";
import { listenOnLoopback, readBody } from "./loopback";
import { setTimeout as sleep } from "node:timers/promises";
import type { FakeBehaviour, FakeServer, FakeStats, ScriptedAnswer } from "./fake-openai-types";

// The types live in a Node-free module so workerd-side code (test/support/fleet.ts) can
// import them without type-checking node:http under workers types.
export type { FakeBehaviour, FakeServer, FakeStats, RecordedRequest, ScriptedAnswer } from "./fake-openai-types";

const RECENT_REQUESTS_KEPT = 50; // enough to assert on headers without unbounded memory
const DEFAULT_STREAM_CHUNKS = 3;
const DEFAULT_FAIL_STATUS = 500;
const EMBEDDING_DIMENSIONS = 8; // small: tests compare shapes, not semantics
const FAKE_MODEL = "fake-model";

type Json = Record<string, unknown>;
/** A streamed reply: chat chunks (`data:` lines, then `[DONE]`), or Anthropic's named events (`event:` and `data:`, no `[DONE]`). */
type Reply = { status: number; body: unknown } | { stream: (i: number, last: boolean) => Json; chunks: number; tail?: Json[]; anthropic?: true };

let nextAnonymousId = 1;

export async function startFakeOpenAI(
  opts: { id?: string; port?: number; behaviour?: FakeBehaviour } = {},
): Promise<FakeServer> {
  const id = opts.id ?? `fake-${nextAnonymousId++}`;
  let behaviour: FakeBehaviour = { ...opts.behaviour };
  let stats = emptyStats();

  const server = http.createServer({ noDelay: true }, (req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const at = Date.now();
    // A snapshot, so a behaviour change mid-request can't mix two configurations.
    const b = behaviour;
    const counted = stats; // resetStats() must not let old requests skew the new counters
    counted.requests++;
    counted.byPath[path] = (counted.byPath[path] ?? 0) + 1;
    counted.inFlight++;
    counted.peakInFlight = Math.max(counted.peakInFlight, counted.inFlight);

    const gone = new AbortController();
    let cutByUs = false;
    res.on("close", () => {
      counted.inFlight--;
      if (res.writableFinished) counted.completed++;
      else if (!cutByUs) {
        counted.aborted++;
        counted.abortedAt.push(Date.now());
        if (counted.abortedAt.length > RECENT_REQUESTS_KEPT) counted.abortedAt.shift();
      }
      gone.abort();
    });

    const body = await readBody(req);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : (v ?? "");
    counted.recent.push({ method: req.method ?? "", path, headers, body, at });
    if (counted.recent.length > RECENT_REQUESTS_KEPT) counted.recent.shift();

    res.setHeader("x-fake-server", id);
    if (req.method === "GET" && path === "/metrics" && b.metrics !== undefined) {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      res.end(b.metrics);
      return;
    }
    if (req.method === "GET" && path === "/usage" && b.usage !== undefined) return sendJson(res, 200, b.usage);
    if (req.method === "GET" && path === "/health") {
      return sendJson(res, b.healthy === false ? 503 : 200, { status: b.healthy === false ? "unhealthy" : "ok" });
    }

    if (b.reply && req.method === "POST") return fixedReply(res, b, headers, gone.signal);

    const route = ROUTES[`${req.method} ${path}`];
    if (!route) return sendJson(res, 404, openAIError(`No route ${req.method} ${path}`, "invalid_request_error", "not_found"));

    if (b.hang) return; // the 'close' listener does the bookkeeping once the client gives up
    for (const [k, v] of Object.entries(b.responseHeaders ?? {})) res.setHeader(k, v);
    if (b.latencyMs) await sleep(b.latencyMs, undefined, { signal: gone.signal }).catch(() => {});
    if (gone.signal.aborted) return;

    const forced = b.status ?? (Math.random() < (b.failRate ?? 0) ? (b.failStatus ?? DEFAULT_FAIL_STATUS) : undefined);
    if (forced !== undefined && forced >= 400) {
      return sendJson(res, forced, openAIError(`Fake failure from ${id}`, "server_error", `fake_${forced}`));
    }

    let parsed: Json = {};
    if (req.method === "POST") {
      try {
        const value: unknown = JSON.parse(body);
        if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object");
        parsed = value as Json;
      } catch {
        return sendJson(res, 400, openAIError("Request body is not a JSON object", "invalid_request_error", "invalid_json"));
      }
    }

    const reply = route(parsed, id, b);
    if ("status" in reply && b.jsonCutAfterBytes !== undefined) {
      const text = JSON.stringify(reply.body);
      res.writeHead(forced ?? reply.status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      await new Promise<void>((r) => res.write(text.slice(0, b.jsonCutAfterBytes), () => r()));
      cutByUs = true;
      res.socket?.destroy();
      return;
    }
    if ("status" in reply) return sendJson(res, forced ?? reply.status, reply.body);

    res.writeHead(forced ?? 200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.flushHeaders(); // the client must see headers before the first chunk's interval elapses
    // Resolves once the chunk reaches the socket; a cut must not discard chunks still corked.
    const frame = (event: Json) => `${reply.anthropic ? `event: ${String(event.type)}\n` : ""}data: ${JSON.stringify(event)}\n\n`;
    const send = (event: Json) => new Promise<void>((r) => res.write(frame(event), () => r()));
    if (b.streamCutAfter !== undefined && b.streamCutAfter < 0) {
      // Headers and nothing else: a server that dies before its first token.
      await sleep(20);
      cutByUs = true;
      res.socket?.destroy();
      return;
    }
    if (b.firstChunkDelayMs) {
      await sleep(b.firstChunkDelayMs, undefined, { signal: gone.signal }).catch(() => {});
      if (gone.signal.aborted) return;
    }
    let written = send(reply.stream(-1, false));
    for (let i = 0; i < reply.chunks; i++) {
      if (b.streamCutAfter !== undefined && i >= b.streamCutAfter) {
        await written;
        cutByUs = true;
        res.socket?.destroy();
        return;
      }
      if (b.chunkIntervalMs) await sleep(b.chunkIntervalMs, undefined, { signal: gone.signal }).catch(() => {});
      if (gone.signal.aborted) return;
      written = send(reply.stream(i, false));
    }
    res.write(frame(reply.stream(reply.chunks, true)));
    for (const event of reply.tail ?? []) res.write(frame(event));
    res.end(reply.anthropic ? "" : "data: [DONE]\n\n");
  }

  const port = await listenOnLoopback(server, opts.port);

  return {
    id,
    port,
    url: `http://127.0.0.1:${port}`,
    setBehaviour: (b) => void (behaviour = { ...b }),
    stats: () => structuredClone(stats),
    resetStats: () => void (stats = emptyStats()),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections(); // keep-alive and hung requests would otherwise hold close() open
      }),
  };
}

const ROUTES: Record<string, (body: Json, id: string, b: FakeBehaviour) => Reply> = {
  "POST /v1/chat/completions": (body, id, b) => {
    const model = typeof body.model === "string" ? body.model : FAKE_MODEL;
    const base = { id: `chatcmpl-${id}`, created: nowSeconds(), model };
    if (b.answer) return scripted(b.answer, body, base);
    if (body.stream === true) {
      const chunks = b.streamChunks ?? DEFAULT_STREAM_CHUNKS;
      return {
        chunks,
        stream: (i, last) => ({
          ...base,
          object: "chat.completion.chunk",
          choices: [{
            index: 0,
            delta: last ? {} : i < 0 ? { role: "assistant", content: "" } : { content: `tok${i} ` },
            finish_reason: last ? "stop" : null,
          }],
        }),
      };
    }
    const content = `Hello from ${id}`;
    return ok({
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: usage(body.messages, content),
    });
  },
  // An Anthropic-native model server (a replica declared `dialect: anthropic`): the scripted answer, or a greeting.
  "POST /v1/messages": (body, id, b) => anthropicMessage(b.answer ?? { content: `Hello from ${id}` }, body, id),
  "POST /v1/completions": (body, id, b) => {
    const model = typeof body.model === "string" ? body.model : FAKE_MODEL;
    const base = { id: `cmpl-${id}`, object: "text_completion", created: nowSeconds(), model };
    if (body.stream === true) {
      return {
        chunks: b.streamChunks ?? DEFAULT_STREAM_CHUNKS,
        stream: (i, last) => ({
          ...base,
          choices: [{ index: 0, text: last || i < 0 ? "" : `tok${i} `, finish_reason: last ? "stop" : null }],
        }),
      };
    }
    const text = `Hello from ${id}`;
    return ok({ ...base, choices: [{ index: 0, text, finish_reason: "stop" }], usage: usage(body.prompt, text) });
  },
  "POST /v1/embeddings": (body) => {
    const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input ?? ""];
    return ok({
      object: "list",
      model: typeof body.model === "string" ? body.model : FAKE_MODEL,
      data: inputs.map((input, index) => ({ object: "embedding", index, embedding: fakeVector(JSON.stringify(input)) })),
      usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
    });
  },
  "GET /v1/models": () =>
    ok({ object: "list", data: [{ id: FAKE_MODEL, object: "model", created: 0, owned_by: "switchyard-fake" }] }),
};

/** The scripted answer (ScriptedAnswer in fake-openai-types.ts), whole or in pieces. */
function scripted(answer: ScriptedAnswer, body: Json, base: Json): Reply {
  const calls = answer.toolCalls ?? [];
  const finish = answer.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop");
  const stopReason = answer.stopReason !== undefined ? { stop_reason: answer.stopReason } : {};
  const u = answer.usage;
  const usage = u && { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.prompt_tokens + u.completion_tokens, ...(u.cached_tokens !== undefined && { prompt_tokens_details: { cached_tokens: u.cached_tokens } }) };
  if (body.stream !== true) {
    const message = { role: "assistant", content: answer.content ?? null, ...(calls.length > 0 && { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) }) };
    return ok({ ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: finish, ...stopReason }], ...(usage && { usage }) });
  }
  const size = answer.pieceChars ?? 3;
  const pieces = (s: string) => Array.from({ length: Math.ceil(s.length / size) }, (_, i) => s.slice(i * size, (i + 1) * size));
  const deltas: Json[] = pieces(answer.content ?? "").map((content) => ({ content }));
  calls.forEach((c, index) => {
    deltas.push({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] });
    for (const args of pieces(c.arguments)) deltas.push({ tool_calls: [{ index, function: { arguments: args } }] });
  });
  const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
  const tail = usage && streamOptions?.include_usage === true ? [{ ...base, object: "chat.completion.chunk", choices: [], usage }] : [];
  return {
    chunks: deltas.length,
    tail,
    stream: (i, last) => ({
      ...base,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: last ? {} : i < 0 ? { role: "assistant", content: "" } : deltas[i], finish_reason: last ? finish : null, ...(last && stopReason) }],
    }),
  };
}

/** The scripted answer in Anthropic's Messages shape, whole or as its event stream (pieces as in `scripted`). */
function anthropicMessage(answer: ScriptedAnswer, body: Json, id: string): Reply {
  const model = typeof body.model === "string" ? body.model : FAKE_MODEL;
  const calls = answer.toolCalls ?? [];
  const finish = answer.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop");
  const stopReason = finish === "length" ? "max_tokens" : finish === "tool_calls" ? "tool_use" : answer.stopReason !== undefined ? "stop_sequence" : "end_turn";
  const stopSequence = stopReason === "stop_sequence" ? answer.stopReason! : null;
  const u = answer.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  const cached = u.cached_tokens ?? 0;
  const usage = { input_tokens: u.prompt_tokens - cached, output_tokens: u.completion_tokens, ...(cached > 0 && { cache_read_input_tokens: cached }) };
  const blocks: Json[] = [...(answer.content ? [{ type: "text", text: answer.content }] : []), ...calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: JSON.parse(c.arguments) as unknown }))];
  const message = { id: `msg_${id}`, type: "message", role: "assistant", model };
  if (body.stream !== true) return ok({ ...message, content: blocks, stop_reason: stopReason, stop_sequence: stopSequence, usage });
  const size = answer.pieceChars ?? 3;
  const pieces = (s: string) => Array.from({ length: Math.ceil(s.length / size) }, (_, i) => s.slice(i * size, (i + 1) * size));
  const events: Json[] = [];
  let index = 0;
  if (answer.content) {
    events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    for (const text of pieces(answer.content)) events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text } });
    events.push({ type: "content_block_stop", index: index++ });
  }
  for (const c of calls) {
    events.push({ type: "content_block_start", index, content_block: { type: "tool_use", id: c.id, name: c.name, input: {} } });
    for (const partial_json of pieces(c.arguments)) events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } });
    events.push({ type: "content_block_stop", index: index++ });
  }
  return {
    anthropic: true,
    chunks: events.length,
    tail: [{ type: "message_stop" }],
    stream: (i, last) =>
      i < 0
        ? { type: "message_start", message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }
        : last
          ? { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: stopSequence }, usage: { output_tokens: u.completion_tokens } }
          : events[i]!,
  };
}

/**
 * A model server of any protocol (KServe v1/v2, Seldon, a router): every POST, on any
 * path, gets the configured status and body; `echoHeaders` copies the named request
 * headers into a JSON object body, as KServe's router tests do.
 */
async function fixedReply(res: http.ServerResponse, b: FakeBehaviour, headers: Record<string, string>, gone: AbortSignal): Promise<void> {
  const reply = b.reply!;
  if (b.hang) return;
  if (b.latencyMs) await sleep(b.latencyMs, undefined, { signal: gone }).catch(() => {});
  if (gone.aborted) return;
  const status = reply.status ?? 200;
  for (const [k, v] of Object.entries(b.responseHeaders ?? {})) res.setHeader(k, v); // a redirect's Location, say
  if (reply.raw !== undefined) {
    res.writeHead(status, { "content-type": reply.contentType ?? "text/plain" });
    res.end(reply.raw);
    return;
  }
  let body = reply.body;
  if (b.echoHeaders && body !== null && typeof body === "object" && !Array.isArray(body)) {
    const echoed = b.echoHeaders.filter((h) => headers[h.toLowerCase()] !== undefined).map((h) => [h, headers[h.toLowerCase()]]);
    body = { ...body, ...Object.fromEntries(echoed) };
  }
  if (!reply.chunked) return sendJson(res, status, body);
  // Two writes and no Content-Length: Node sends it chunked, as many servers send errors.
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json" });
  res.write(text.slice(0, Math.floor(text.length / 2)));
  res.end(text.slice(Math.floor(text.length / 2)));
}

function ok(body: unknown): Reply {
  return { status: 200, body };
}

function openAIError(message: string, type: string, code: string) {
  return { error: { message, type, code } };
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Token counts are word counts: plausible numbers are enough for accounting tests. */
function usage(prompt: unknown, completion: string) {
  const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
  const promptTokens = words(JSON.stringify(prompt ?? ""));
  const completionTokens = words(completion);
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

/** Deterministic per input, so tests can tell which input produced which vector. */
function fakeVector(seed: string): number[] {
  let h = 2166136261;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 16777619);
  return Array.from({ length: EMBEDDING_DIMENSIONS }, (_, d) => ((Math.imul(h, d + 1) >>> 0) % 2000) / 1000 - 1);
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function emptyStats(): FakeStats {
  return { requests: 0, byPath: {}, aborted: 0, abortedAt: [], completed: 0, inFlight: 0, peakInFlight: 0, recent: [] };
}
