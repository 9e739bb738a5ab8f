/**
 * Types of the fake vLLM replica (tools/fakes/fake-vllm.ts), kept free of Node imports so
 * tests running inside workerd (test/support/fleet.ts) can share them.
 */

/** Everything a replica can be started with; every field has a default (tools/fakes/vllm/options.ts). */
export interface FakeVllmOptions {
  /** Shown in the x-fake-vllm header and in stats. */
  id?: string;
  /** 0 or absent: any free port. */
  port?: number;
  /** The served (base) model name: GET /v1/models and the model_name metric label. */
  model?: string;
  /** Tokens per KV block (vLLM's --block-size). */
  blockSize?: number;
  /** KV capacity in blocks (what vLLM reports as num_gpu_blocks). */
  numGpuBlocks?: number;
  /** At most this many requests run at once (vLLM's --max-num-seqs); the rest wait. */
  maxNumSeqs?: number;
  /** Prefill cost per uncached prompt token, ms, for a prefill running alone (prefills at once share the replica). */
  prefillMsPerToken?: number;
  /** Fixed cost added to every prefill, ms. */
  prefillOverheadMs?: number;
  /** Cost of one output token after the first, ms, with one request running. */
  decodeMsPerToken?: number;
  /** Added to each output token's cost per other running request, ms (batching slows decode). */
  decodeMsPerExtraSeq?: number;
  /** Cap on output tokens, whatever max_tokens asks for. */
  maxOutputTokens?: number;
  /** Output tokens when the request names no max_tokens. */
  defaultOutputTokens?: number;
  /** Streamed output tokens per SSE chunk. */
  streamTokensPerChunk?: number;
  /** LoRA adapter names served besides the base model. */
  loras?: string[];
  /** At most this many adapters loaded at once (vLLM's --max-loras). */
  maxLora?: number;
  /** Cost of loading an adapter that is not loaded, ms. */
  loraLoadMs?: number;
  /** Seeds the generated text (same seed and prompt: same answer on every replica). */
  seed?: number;
}

/**
 * What GET /metrics does: `live` renders the current state; `frozen` keeps answering 200
 * with the text rendered when it was tuned to frozen (a stuck exporter: stale numbers
 * that look fresh); `failing` answers 503 (a scrape that fails, so a router's last good
 * sample ages); `hanging` never answers (the request is held open until the client gives
 * up or the replica closes: a scrape that can only time out). Benchmarks use `frozen` and
 * `failing` to see whether a router herds on stale data; tests use `hanging` to see that
 * one replica's slow scrape holds up no other's.
 */
export type MetricsMode = "live" | "frozen" | "failing" | "hanging";

/** What can change on a running replica (PUT /vllm-servers/:id/tuning); absent fields keep their value. */
export interface FakeVllmTuning {
  prefillMsPerToken?: number;
  prefillOverheadMs?: number;
  decodeMsPerToken?: number;
  decodeMsPerExtraSeq?: number;
  loraLoadMs?: number;
  /** GET /health answers 503 when false. */
  healthy?: boolean;
  /** How GET /metrics answers (default live); see MetricsMode. */
  metrics?: MetricsMode;
}

/** Where a request is: queued, running, finished, or aborted (its client left, or the replica closed). */
export type VllmOutcome = "running" | "waiting" | "completed" | "aborted";

/**
 * One request as the replica saw it. Times are epoch milliseconds with sub-millisecond
 * precision (performance.timeOrigin + performance.now()), so differences are durations.
 */
export interface VllmRequestRecord {
  /** Arrival order on this replica, from 1. */
  seq: number;
  /** The `model` the request named: the base model or an adapter. */
  model: string;
  /** The adapter it ran on, or null for the base model. */
  lora: string | null;
  stream: boolean;
  promptTokens: number;
  /** Prompt tokens served from the prefix cache (known once it is scheduled). */
  cachedTokens: number;
  /** promptTokens - cachedTokens: what prefill paid for. */
  uncachedTokens: number;
  /** Output tokens produced so far. */
  completionTokens: number;
  /** Output tokens it will produce if it runs to the end. */
  plannedTokens: number;
  /** Whether scheduling it had to load its adapter. */
  loraLoaded: boolean;
  arrivalAt: number;
  /** Left the waiting queue and started running; null while waiting. */
  startAt: number | null;
  /** Prefill done and the first token out; TTFT = firstTokenAt - arrivalAt. */
  firstTokenAt: number | null;
  /** Finished or aborted. */
  endAt: number | null;
  outcome: VllmOutcome;
}

export interface VllmStats {
  id: string;
  model: string;
  /** The options in force, defaults filled in (tuning applied). */
  options: Required<Omit<FakeVllmOptions, "id" | "port">> & { healthy: boolean; metrics: MetricsMode };
  running: number;
  waiting: number;
  kv: {
    capacityBlocks: number;
    /** Blocks held by running requests: what vllm:kv_cache_usage_perc reports. */
    usedBlocks: number;
    /** Blocks holding a reusable prefix, held or idle. */
    cachedBlocks: number;
    /** Cached blocks no running request holds: free, but reusable until evicted. */
    idleCachedBlocks: number;
    evictedBlocks: number;
  };
  /** GET /metrics requests answered, in any mode: whether (and how often) a router scraped. */
  metricsReads: number;
  /** Token counters, as vllm:prefix_cache_queries_total / _hits_total. */
  prefixCache: { queriedTokens: number; hitTokens: number };
  lora: {
    /** Loaded adapters, least recently used first. */
    loaded: string[];
    loads: number;
    evictions: number;
  };
  /** Requests refused with a 4xx before queueing (unknown model, too long, bad body). */
  rejected: number;
  /** The most recent requests, oldest first (up to RECORDS_KEPT in tools/fakes/vllm/records.ts). */
  records: VllmRequestRecord[];
  /** Records dropped from the front because the list was full. */
  droppedRecords: number;
}

export interface FakeVllmServer {
  id: string;
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
  stats(): VllmStats;
  /** Clears records and the rejected count; the cache, counters and queue are untouched. */
  resetStats(): void;
  tune(t: FakeVllmTuning): void;
  /** Closes the server; running requests are cut. */
  close(): Promise<void>;
}
