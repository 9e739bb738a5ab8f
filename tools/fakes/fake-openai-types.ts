/**
 * Types of the fake OpenAI server (tools/fakes/fake-openai.ts), kept free of Node imports so
 * tests running inside workerd can share them.
 */
export interface FakeBehaviour {
  /** Delay before response headers, ms (default 0). */
  latencyMs?: number;
  /** 0..1: fraction of model requests answered with failStatus. */
  failRate?: number;
  /** Status for failRate failures (default 500), with an OpenAI error body. */
  failStatus?: number;
  /** When set, every model request answers this status (OpenAI error body if >= 400). */
  status?: number;
  /** Accept model requests but never send headers, until the client gives up. */
  hang?: boolean;
  /** Content chunks for stream:true (default 3). */
  streamChunks?: number;
  /** Delay between SSE chunks, ms (default 0). */
  chunkIntervalMs?: number;
  /** Delay between a stream's headers and its first chunk, ms: a server that answers at once and is slow to its first token. */
  firstChunkDelayMs?: number;
  /** Destroy the socket after this many content chunks: a stream that ends mid-way; -1: after the headers, before any chunk. */
  streamCutAfter?: number;
  /** A JSON (non-streamed) answer sends its headers, with the whole body's content-length, and this many bytes of it, then its socket is destroyed. */
  jsonCutAfterBytes?: number;
  /** Extra headers on every model response (a `reply` too). */
  responseHeaders?: Record<string, string>;
  /** Any POST on any path answers this (JSON `body`, or `raw` text), instead of the OpenAI routes. */
  reply?: { status?: number; body?: unknown; raw?: string; contentType?: string; chunked?: boolean };
  /** With `reply`: copy these request headers (by name) into a JSON object body. */
  echoHeaders?: string[];
  /** GET /health answers 503 when false (default true); the only flag health obeys. */
  healthy?: boolean;
  /** GET /metrics answers this Prometheus text (404 when unset). */
  metrics?: string;
  /** Chat completions answer this instead of their default text (the dialect tests' scripted model). */
  answer?: ScriptedAnswer;
  /** GET /usage answers this JSON (a provider's usage API, for RouteWise quotas; 404 when unset). */
  usage?: unknown;
}

/**
 * A chat completion's answer as a test scripts it. Streamed, its text and each tool call's
 * arguments are split into pieces of `pieceChars` characters across chunks, tool calls one
 * after another, a call's id and name in its first chunk; the usage comes in a chunk of
 * its own (`choices: []`) when the request asked for it (`stream_options.include_usage`).
 */
export interface ScriptedAnswer {
  content?: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
  /** Default: `tool_calls` with tool calls, else `stop`. */
  finishReason?: string;
  /** vLLM's `stop_reason` on the choice: the stop string met. */
  stopReason?: string;
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** Characters per streamed piece (default 3). */
  pieceChars?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Arrival time, epoch ms. */
  at: number;
}

export interface FakeStats {
  /** Every request, health checks included; byPath separates them. */
  requests: number;
  byPath: Record<string, number>;
  /** Client connection closed before the response finished (server-side stream cuts excluded). */
  aborted: number;
  /** When each of those closes happened, epoch ms (the last 50). */
  abortedAt: number[];
  completed: number;
  inFlight: number;
  /** The most requests in flight at once since the counters were reset (health checks included). */
  peakInFlight: number;
  /** The last 50 requests, oldest first (RECENT_REQUESTS_KEPT in fake-openai.ts). */
  recent: RecordedRequest[];
}

export interface FakeServer {
  id: string;
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
  /** Replaces (does not merge) the current behaviour. */
  setBehaviour(b: FakeBehaviour): void;
  stats(): FakeStats;
  resetStats(): void;
  close(): Promise<void>;
}
