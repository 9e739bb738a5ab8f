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
  /** vllm:num_requests_waiting: queued behind the running batch. */
  waiting: number;
  /** vllm:num_requests_running: the running batch. */
  running: number;
  /** vllm:kv_cache_usage_perc (older vllm:gpu_cache_usage_perc), a fraction in [0, 1]. */
  kvUsage: number;
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

/**
 * The metrics of a vLLM `/metrics` answer, or null when it has none of the core gauges
 * (not a vLLM server, or not ready): a replica without numbers is routed on load alone.
 * Series of every `model_name` are summed: one server serves one base model and its
 * adapters, and the router needs the server's own queue.
 */
export function readVllmMetrics(text: string, sampledAt: number): ReplicaMetrics | null {
  const samples = parsePrometheusText(text);
  const sum = (name: string): number | null => {
    const matching = samples.filter((s) => s.name === name);
    return matching.length === 0 ? null : matching.reduce((n, s) => n + s.value, 0);
  };
  const waiting = sum("vllm:num_requests_waiting");
  const running = sum("vllm:num_requests_running");
  const kv = maxOf(samples, "vllm:kv_cache_usage_perc") ?? maxOf(samples, "vllm:gpu_cache_usage_perc");
  if (waiting === null || running === null || kv === null) return null;

  const lora = newest(samples, "vllm:lora_requests_info");
  const cache = samples.find((s) => s.name === "vllm:cache_config_info");
  return {
    waiting,
    running,
    kvUsage: Math.min(1, Math.max(0, kv)),
    loraRunning: csv(lora?.labels.running_lora_adapters),
    loraWaiting: csv(lora?.labels.waiting_lora_adapters),
    maxLora: number(lora?.labels.max_lora),
    blockSize: number(cache?.labels.block_size),
    numGpuBlocks: number(cache?.labels.num_gpu_blocks),
    prefixHits: sum("vllm:prefix_cache_hits_total") ?? sum("vllm:gpu_prefix_cache_hits_total"),
    prefixQueries: sum("vllm:prefix_cache_queries_total") ?? sum("vllm:gpu_prefix_cache_queries_total"),
    itlSumS: sum("vllm:inter_token_latency_seconds_sum") ?? sum("vllm:time_per_output_token_seconds_sum"),
    itlCount: sum("vllm:inter_token_latency_seconds_count") ?? sum("vllm:time_per_output_token_seconds_count"),
    tpotMs: null,
    sampledAt,
  };
}

function maxOf(samples: Sample[], name: string): number | null {
  const values = samples.filter((s) => s.name === name).map((s) => s.value);
  return values.length === 0 ? null : Math.max(...values);
}

/** vLLM writes a new lora_requests_info series per label set, valued with its time: the newest is current. */
function newest(samples: Sample[], name: string): Sample | undefined {
  let best: Sample | undefined;
  for (const s of samples) if (s.name === name && (best === undefined || s.value > best.value)) best = s;
  return best;
}

function csv(value: string | undefined): string[] {
  return (value ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}

function number(value: string | undefined): number | null {
  if (value === undefined || value === "") return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

/** The sample with `tpotMs` from its histogram's growth since `before` (a server restart resets the counters: no delta then). */
export function withTpot(sample: ReplicaMetrics, before: ReplicaMetrics | null): ReplicaMetrics {
  if (!before || sample.itlSumS === null || sample.itlCount === null || before.itlSumS === null || before.itlCount === null) return sample;
  const tokens = sample.itlCount - before.itlCount;
  const seconds = sample.itlSumS - before.itlSumS;
  if (tokens < 0 || seconds < 0) return sample; // restarted
  return { ...sample, tpotMs: tokens > 0 ? (1000 * seconds) / tokens : before.tpotMs };
}
