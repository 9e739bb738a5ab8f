import { describe, expect, it } from "vitest";
import { parsePrometheusText } from "../../src/lib/prometheus/parse";
import { readVllmMetrics, withTpot } from "../../src/core/picking/vllm-metrics";

// Shaped as vLLM v1 writes /metrics (names, model_name labels, lora_requests_info valued with its time).
const VLLM = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B"} 0.42
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B"} 1200.0
vllm:prefix_cache_hits_total{engine="0",model_name="meta-llama/Llama-3.1-8B"} 900.0
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora",waiting_lora_adapters=""} 1.795e+09
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora,chat-lora",waiting_lora_adapters="x"} 1.796e+09
vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="31250"} 1.0
`;

describe("Prometheus text", () => {
  it("reads names, labels (escapes included) and values, and skips comments and malformed lines", () => {
    const samples = parsePrometheusText(`# HELP x y\nm{a="1",b="q\\"uote"} 2.5 1700000000\nbroken{a=1} 3\nplain 4\nnot-a-value xyz\n`);
    expect(samples).toEqual([
      { name: "m", labels: { a: "1", b: 'q"uote' }, value: 2.5 },
      { name: "plain", labels: {}, value: 4 },
    ]);
  });
});

describe("vLLM metrics", () => {
  it("reads queue, running, KV usage, the newest LoRA series, the cache config and prefix counters", () => {
    expect(readVllmMetrics(VLLM, 123)).toEqual({
      waiting: 7,
      running: 3,
      kvUsage: 0.42,
      loraRunning: ["sql-lora", "chat-lora"],
      loraWaiting: ["x"],
      maxLora: 2,
      blockSize: 16,
      numGpuBlocks: 31250,
      prefixHits: 900,
      prefixQueries: 1200,
      itlSumS: null,
      itlCount: null,
      tpotMs: null,
      sampledAt: 123,
    });
  });

  it("sums the queue over model_name series, and reads the older KV gauge name", () => {
    const text = `vllm:num_requests_waiting{model_name="a"} 2\nvllm:num_requests_waiting{model_name="b"} 3\nvllm:num_requests_running{model_name="a"} 1\nvllm:gpu_cache_usage_perc{model_name="a"} 0.9\n`;
    expect(readVllmMetrics(text, 0)).toMatchObject({ waiting: 5, running: 1, kvUsage: 0.9, maxLora: null, blockSize: null });
  });

  it("is null for a server without the core gauges: such a replica is routed on load alone", () => {
    expect(readVllmMetrics("process_cpu_seconds_total 12\n", 0)).toBeNull();
    expect(readVllmMetrics("vllm:num_requests_waiting 1\nvllm:num_requests_running 1\n", 0)).toBeNull();
  });
});

describe("time per output token", () => {
  const text = (sum: number, count: number, name = "vllm:inter_token_latency_seconds") =>
    `vllm:num_requests_running{model_name="m"} 1\nvllm:num_requests_waiting{model_name="m"} 0\nvllm:kv_cache_usage_perc{model_name="m"} 0.1\n${name}_sum{engine="0",model_name="m"} ${sum}\n${name}_count{engine="0",model_name="m"} ${count}\n`;

  it("reads the inter-token latency histogram (or vLLM's older time_per_output_token name), with no TPOT from one scrape", () => {
    expect(readVllmMetrics(text(2.5, 100), 1)).toMatchObject({ itlSumS: 2.5, itlCount: 100, tpotMs: null });
    expect(readVllmMetrics(text(1, 10, "vllm:time_per_output_token_seconds"), 1)).toMatchObject({ itlSumS: 1, itlCount: 10 });
  });

  it("is the mean over the tokens generated between two scrapes; kept through an idle gap; none across a restart", () => {
    const first = readVllmMetrics(text(2.5, 100), 1)!;
    const second = withTpot(readVllmMetrics(text(4.5, 140), 2)!, first);
    expect(second.tpotMs).toBeCloseTo(50, 6); // 2 s over 40 tokens
    const idle = withTpot(readVllmMetrics(text(4.5, 140), 3)!, second);
    expect(idle.tpotMs).toBeCloseTo(50, 6);
    expect(withTpot(readVllmMetrics(text(0.1, 5), 4)!, idle).tpotMs).toBeNull(); // counters went back: a restart
  });
});
