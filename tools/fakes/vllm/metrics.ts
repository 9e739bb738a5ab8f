/**
 * GET /metrics in vLLM's Prometheus text, for the series routers read (vllm/v1/metrics/
 * loggers.py, PrometheusStatLogger): names, HELP texts, label names and label order as
 * vLLM's prometheus_client writes them, values formatted as its floatToGoString does
 * ("2.0", "1.732e+09"). Counters carry `_total` and `_created` samples.
 *
 * Only the scheduler, cache and LoRA series are written, and of vLLM's latency histograms
 * only the inter-token latency's sum and count (routers read the mean time per output
 * token from them; a benchmark reads per-request records from the stats instead).
 */
import type { Engine } from "./engine";

export function renderMetrics(engine: Engine): string {
  const c = engine.config;
  const perEngine = `{model_name="${escapeLabel(c.model)}",engine="0"}`; // labelnames = ["model_name", "engine"]
  const created = goFloat(engine.startedAt / 1000);
  const out: string[] = [];
  const gauge = (name: string, help: string, value: number) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${perEngine} ${goFloat(value)}`);
  };
  const counter = (name: string, help: string, value: number) => {
    out.push(`# HELP ${name}_total ${help}`, `# TYPE ${name}_total counter`, `${name}_total${perEngine} ${goFloat(value)}`, `${name}_created${perEngine} ${created}`);
  };

  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", engine.running);
  const itl = "vllm:inter_token_latency_seconds";
  out.push(
    `# HELP ${itl} Histogram of inter-token latency in seconds.`,
    `# TYPE ${itl} histogram`,
    `${itl}_bucket{engine="0",le="+Inf",model_name="${escapeLabel(c.model)}"} ${goFloat(engine.totals.itlTokens)}`,
    `${itl}_count${perEngine} ${goFloat(engine.totals.itlTokens)}`,
    `${itl}_sum${perEngine} ${goFloat(engine.totals.itlSeconds)}`,
  );
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", engine.waiting);
  // Deprecated names still written by vLLM 0.9/0.10 and read by older routers (production-stack).
  gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.", engine.cache.usage);
  counter("vllm:gpu_prefix_cache_queries", "GPU prefix cache queries, in terms of number of queried tokens.DEPRECATED: Use vllm:prefix_cache_queries instead.", engine.totals.queried);
  counter("vllm:gpu_prefix_cache_hits", "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.", engine.totals.hits);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", engine.cache.usage);
  counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", engine.totals.queried);
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", engine.totals.hits);
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", 0); // the fake never preempts
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", engine.totals.prompt);
  counter("vllm:generation_tokens", "Number of generation tokens processed.", engine.totals.generation);

  // Only with LoRA enabled, and (as in vLLM) only once a step has set it.
  const loraSeries = engine.loraInfo.all();
  if (c.loras.length > 0 && loraSeries.length > 0) {
    out.push("# HELP vllm:lora_requests_info Running stats on lora requests.", "# TYPE vllm:lora_requests_info gauge");
    for (const s of loraSeries) {
      out.push(`vllm:lora_requests_info{max_lora="${c.maxLora}",waiting_lora_adapters="${s.waiting}",running_lora_adapters="${s.running}"} ${goFloat(s.at)}`);
    }
  }

  // An info metric emulated with a gauge set to 1; its labels are CacheConfig.metrics_info()
  // (a subset of its fields here) plus engine. Routers read block_size and num_gpu_blocks.
  const cacheInfo = {
    block_size: c.blockSize,
    gpu_memory_utilization: "0.9",
    cache_dtype: "auto",
    enable_prefix_caching: "True",
    num_gpu_blocks: c.numGpuBlocks,
    num_cpu_blocks: "None",
    engine: "0",
  };
  const labels = Object.entries(cacheInfo).map(([k, v]) => `${k}="${v}"`).join(",");
  out.push("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig", "# TYPE vllm:cache_config_info gauge", `vllm:cache_config_info{${labels}} 1.0`);
  return `${out.join("\n")}\n`;
}

/**
 * prometheus_client's floatToGoString: Python's repr, with Go's earlier switch to an
 * exponent for large values (1732123456.5 -> "1.7321234565e+09").
 */
export function goFloat(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  const s = Number.isInteger(v) ? v.toFixed(1) : String(v);
  const dot = s.indexOf(".");
  if (v > 0 && dot > 6) {
    const mantissa = `${s[0]}.${s.slice(1, dot)}${s.slice(dot + 1)}`.replace(/[0.]+$/, "");
    return `${mantissa}e+0${dot - 1}`;
  }
  return s;
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
