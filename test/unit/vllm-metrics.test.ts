import { describe, expect, it } from "vitest";
import { parsePrometheusText, PrometheusLimitError } from "../../src/lib/prometheus/parse";
import { MAX_METRICS_SERIES, readVllmMetrics, withTpot } from "../../src/core/picking/vllm-metrics";

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

  it("reads NaN, +Inf, -Inf and 1e308 as the numbers they are, 1e309 and Go's other spellings too: judging them is the reader's job", () => {
    const values = parsePrometheusText("a NaN\nb +Inf\nc -Inf\nd 1e308\ne 1e309\nf -1e309\ng inf\nh -Infinity\ni nan\nj garbage\n").map((s) => [s.name, s.value]);
    const inf = Number.POSITIVE_INFINITY;
    expect(values).toEqual([["a", NaN], ["b", inf], ["c", -inf], ["d", 1e308], ["e", inf], ["f", -inf], ["g", inf], ["h", -inf], ["i", NaN]]); // j is no number: skipped
  });

  it("refuses more samples than its limit, and says so", () => {
    const text = "x 1\n".repeat(11);
    expect(parsePrometheusText(text, 11)).toHaveLength(11);
    expect(() => parsePrometheusText(text, 10)).toThrow(PrometheusLimitError);
    expect(() => parsePrometheusText(text, 10)).toThrow("more than 10 samples");
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

  it("makes a non-finite or out-of-range value unknown (null) for that metric only, the rest still read", () => {
    const core = (waiting: string, running: string, kv: string) =>
      `vllm:num_requests_waiting{model_name="m"} ${waiting}\nvllm:num_requests_running{model_name="m"} ${running}\nvllm:kv_cache_usage_perc{model_name="m"} ${kv}\n`;
    expect(readVllmMetrics(core("+Inf", "2", "0.5"), 0)).toMatchObject({ waiting: null, running: 2, kvUsage: 0.5 });
    expect(readVllmMetrics(core("3", "NaN", "0.5"), 0)).toMatchObject({ waiting: 3, running: null, kvUsage: 0.5 });
    expect(readVllmMetrics(core("3", "2", "-Inf"), 0)).toMatchObject({ waiting: 3, running: 2, kvUsage: null });
    expect(readVllmMetrics(core("1e308", "-1", "1e308"), 0)).toMatchObject({ waiting: null, running: null, kvUsage: null });
    expect(readVllmMetrics(core("2", "1", "1e309"), 0)).toMatchObject({ waiting: 2, running: 1, kvUsage: null }); // not the whole scrape failed
    expect(readVllmMetrics(core("NaN", "NaN", "NaN"), 0)).toMatchObject({ waiting: null, running: null, kvUsage: null, sampledAt: 0 }); // a vLLM server, numbers unknown
    // One bad series of several makes the sum unknown, not the sum of the rest.
    expect(readVllmMetrics(`${core("1", "1", "0.1")}vllm:num_requests_waiting{model_name="lora"} +Inf\n`, 0)).toMatchObject({ waiting: null, running: 1 });
    // Counters, histograms and info labels likewise.
    const extra =
      `vllm:prefix_cache_hits_total{model_name="m"} NaN\nvllm:prefix_cache_queries_total{model_name="m"} 1e308\n` +
      `vllm:inter_token_latency_seconds_sum{model_name="m"} +Inf\nvllm:inter_token_latency_seconds_count{model_name="m"} -5\n` +
      `vllm:cache_config_info{block_size="1e308",num_gpu_blocks="NaN"} 1\nvllm:lora_requests_info{max_lora="Infinity",running_lora_adapters="a",waiting_lora_adapters=""} NaN\n`;
    expect(readVllmMetrics(core("1", "1", "0.1") + extra, 0)).toMatchObject({ prefixHits: null, prefixQueries: null, itlSumS: null, itlCount: null, blockSize: null, numGpuBlocks: null, maxLora: null, loraRunning: [] });
  });

  it("refuses a body with more than MAX_METRICS_SERIES samples", () => {
    const text = `vllm:num_requests_waiting 1\nvllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0.1\n${"other 1\n".repeat(MAX_METRICS_SERIES)}`;
    expect(() => readVllmMetrics(text, 0)).toThrow(PrometheusLimitError);
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

  it("is unknown when a histogram value is not a usable number, never NaN or Infinity", () => {
    const first = readVllmMetrics(text(2.5, 100), 1)!;
    for (const [sum, count] of [["+Inf", "140"], ["NaN", "140"], ["4.5", "+Inf"], ["1e308", "140"]] as const) {
      const next = readVllmMetrics(text(sum as unknown as number, count as unknown as number), 2)!;
      expect(withTpot(next, first).tpotMs, `${sum} / ${count}`).toBeNull();
    }
    // Finite counters whose growth means an absurd time per token (1e12 s over one token): unknown too.
    expect(withTpot(readVllmMetrics(text(1e12, 101), 2)!, first).tpotMs).toBeNull();
  });
});
