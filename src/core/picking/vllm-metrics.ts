import type { Sample } from "../../lib/prometheus/parse";
import { parsePrometheusText } from "../../lib/prometheus/parse";

/**
 * What a replica's own metrics say about it, as the router routes on them: the one shape
 * of a scrape, from the pool's object through the isolates' views to the policies. Read
 * from vLLM's Prometheus names (the ones the Gateway API Inference Extension scrapes;
 * SGLang and TRT-LLM map onto them as GAIE does); `sampledAt` is when the pool's object
 * read them, so a view can tell how old they are.
 */
export interface ReplicaMetrics {
  /**
   * vllm:num_requests_waiting: queued behind the running batch. Null when the engine wrote
   * a value that is no usable number (NaN, ±Inf, out of range): unknown for this replica,
   * and an unknown metric is treated as a stale one (neutral), never as a full queue.
   */
  waiting: number | null;
  /** vllm:num_requests_running: the running batch (null: unknown, as `waiting`). */
  running: number | null;
  /** vllm:kv_cache_usage_perc (older vllm:gpu_cache_usage_perc), a fraction in [0, 1] (null: unknown, as `waiting`). */
  kvUsage: number | null;
  /** vllm:lora_requests_info, the newest series: adapters loaded and running (`running_lora_adapters`)... */
  loraRunning: readonly string[];
  /** ...adapters requested and waiting to load (`waiting_lora_adapters`)... */
  loraWaiting: readonly string[];
  /** ...and adapter slots (`max_lora`); null when the engine does not say (then a slot is assumed free). */
  maxLora: number | null;
  /** vllm:cache_config_info: tokens per KV block and blocks in GPU memory (sizes the prefix index). */
  blockSize: number | null;
  numGpuBlocks: number | null;
  /** vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, tokens since the server started. */
  prefixHits: number | null;
  prefixQueries: number | null;
  /** vllm:inter_token_latency_seconds (older vllm:time_per_output_token_seconds) histogram: sum in s and count, since the server started. */
  itlSumS: number | null;
  itlCount: number | null;
  /**
   * Mean time per output token, ms, over the tokens generated between this scrape and the
   * one before (the histogram's deltas, computed by the pool's object); the previous value
   * when no token was generated meanwhile; null before two scrapes.
   */
  tpotMs: number | null;
  /** Epoch ms the sample was taken (the pool object's clock; policies judge its age against their `now`). */
  sampledAt: number;
}

export const MAX_METRICS_SERIES = 20_000; // vLLM writes hundreds of samples, a few thousand with many adapters and buckets; past this it is no model server
const MAX_REQUESTS = 1_000_000; // a queue or batch beyond any engine's: the exporter is broken
const MAX_COUNTER = Number.MAX_SAFE_INTEGER; // past 2^53 a counter has lost its units digit: its deltas are noise
const MAX_INFO = 2 ** 31 - 1; // block size, GPU blocks, LoRA slots: vLLM's own ints
export const MAX_TPOT_MS = 600_000; // the largest X-SLO-TPOT-Ms a request may state; a longer mean per token is a broken histogram

/**
 * The metrics of a vLLM `/metrics` answer, or null when it has none of the core gauges
 * (not a vLLM server, or not ready): a replica without numbers is routed on load alone.
 * Series of every `model_name` are summed: one server serves one base model and its
 * adapters, and the router needs the server's own queue.
 *
 * Sanitised per metric: a value that is NaN, ±Inf or out of its range (a negative queue,
 * a usage above 1, 1e308) makes that metric null, unknown for this replica only; the
 * replica's other metrics and every other replica are read as usual. One bad series of
 * a sum makes the sum unknown. More than MAX_METRICS_SERIES samples throws
 * PrometheusLimitError (lib/prometheus/parse.ts): the scrape fails.
 */
export function readVllmMetrics(text: string, sampledAt: number): ReplicaMetrics | null {
  const samples = parsePrometheusText(text, MAX_METRICS_SERIES);
  const has = (name: string) => samples.some((s) => s.name === name);
  const kvName = has("vllm:kv_cache_usage_perc") ? "vllm:kv_cache_usage_perc" : "vllm:gpu_cache_usage_perc";
  if (!has("vllm:num_requests_waiting") || !has("vllm:num_requests_running") || !has(kvName)) return null;

  const counter = (name: string, older: string) => sum(samples, name, MAX_COUNTER) ?? sum(samples, older, MAX_COUNTER);
  const lora = newest(samples, "vllm:lora_requests_info");
  const cache = samples.find((s) => s.name === "vllm:cache_config_info");
  return {
    waiting: sum(samples, "vllm:num_requests_waiting", MAX_REQUESTS),
    running: sum(samples, "vllm:num_requests_running", MAX_REQUESTS),
    kvUsage: maxOf(samples, kvName, 1),
    loraRunning: csv(lora?.labels.running_lora_adapters),
    loraWaiting: csv(lora?.labels.waiting_lora_adapters),
    maxLora: number(lora?.labels.max_lora),
    blockSize: number(cache?.labels.block_size),
    numGpuBlocks: number(cache?.labels.num_gpu_blocks),
    prefixHits: counter("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    prefixQueries: counter("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    itlSumS: counter("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum"),
    itlCount: counter("vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count"),
    tpotMs: null,
    sampledAt,
  };
}

/**
 * Whether a metric's value may be routed on: a finite number. The reader already makes
 * unusable values null; scorers and filters check again, so a sample that reached them
 * another way (a test, an older object) cannot switch scoring off for the whole pool.
 */
export function known(value: number | null | undefined): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** A finite number in [0, max]. */
const usable = (value: number, max: number) => Number.isFinite(value) && value >= 0 && value <= max;

/** The sum of a name's series; null when there is none or any is unusable. */
function sum(samples: Sample[], name: string, max: number): number | null {
  let total: number | null = null;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!usable(s.value, max)) return null;
    total = (total ?? 0) + s.value;
  }
  return total !== null && total <= max ? total : null;
}

/** The largest of a name's series; null when there is none or any is unusable. */
function maxOf(samples: Sample[], name: string, max: number): number | null {
  let most: number | null = null;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!usable(s.value, max)) return null;
    most = Math.max(most ?? 0, s.value);
  }
  return most;
}

/** vLLM writes a new lora_requests_info series per label set, valued with its time: the newest is current (a series without a usable time is skipped). */
function newest(samples: Sample[], name: string): Sample | undefined {
  let best: Sample | undefined;
  for (const s of samples) if (s.name === name && usable(s.value, MAX_COUNTER) && (best === undefined || s.value > best.value)) best = s;
  return best;
}

function csv(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}

function number(value: string | undefined): number | null {
  if (value === undefined || value === "") return null;
  const n = Number(value);
  return usable(n, MAX_INFO) ? n : null;
}

/** The sample with `tpotMs` from its histogram's growth since `before` (a server restart resets the counters: no delta then). */
export function withTpot(sample: ReplicaMetrics, before: ReplicaMetrics | null): ReplicaMetrics {
  if (!before || sample.itlSumS === null || sample.itlCount === null || before.itlSumS === null || before.itlCount === null) return sample;
  const tokens = sample.itlCount - before.itlCount;
  const seconds = sample.itlSumS - before.itlSumS;
  if (tokens < 0 || seconds < 0) return sample; // restarted
  const tpotMs = tokens > 0 ? (1000 * seconds) / tokens : before.tpotMs;
  return { ...sample, tpotMs: tpotMs !== null && usable(tpotMs, MAX_TPOT_MS) ? tpotMs : null };
}
