import { describe, expect, it } from "vitest";
import { MAX_SAMPLES_PER_ROUTE, summarize, trimSamples } from "../../src/core/routewise/envelope";
import { percentileAtOrAbove, percentileKey, percentilesOf } from "../../src/core/routewise/percentiles";
import type { LatencySample } from "../../src/core/routewise/types";

describe("percentileKey", () => {
  it("names a percentile as the envelope stores it", () => {
    expect(percentileKey(50)).toBe("p50");
    expect(percentileKey(99.9)).toBe("p99.9");
  });
});

describe("percentilesOf (nearest rank)", () => {
  const oneToTen = [7, 3, 10, 1, 5, 9, 2, 8, 6, 4];

  it("takes the value at rank ⌈p/100 × n⌉ of the sorted values", () => {
    // n = 10: p10 → rank 1, p50 → 5, p90 → 9, p95 → ⌈9.5⌉ = 10, p99 → 10.
    expect(percentilesOf(oneToTen, [10, 50, 90, 95, 99])).toEqual({ p10: 1, p50: 5, p90: 9, p95: 10, p99: 10 });
  });

  it("rounds the rank up, never to nearest: 60% of 4 values is rank ⌈2.4⌉ = 3", () => {
    expect(percentilesOf([40, 10, 30, 20], [60])).toEqual({ p60: 30 });
  });

  it("never ranks below 1: a tiny percentile is the minimum", () => {
    expect(percentilesOf(oneToTen, [0.01])).toEqual({ "p0.01": 1 });
  });

  it("lands on the exact rank when p × n / 100 is an integer despite rounding", () => {
    const values = Array.from({ length: 1_500 }, (_, i) => i + 1);
    // 2.2 × 1,500 / 100 is 33.00000000000001 in doubles: without the epsilon the rank would be 34.
    expect(percentilesOf(values, [2.2, 99.9, 95, 50])).toEqual({ "p2.2": 33, "p99.9": 1_499, p95: 1_425, p50: 750 });
  });

  it("answers observed values only, and leaves its input unsorted", () => {
    const input = [30, 10, 20];
    expect(percentilesOf(input, [50])).toEqual({ p50: 20 });
    expect(input).toEqual([30, 10, 20]);
  });

  it("no values: an empty record", () => {
    expect(percentilesOf([], [50, 99])).toEqual({});
  });
});

describe("percentileAtOrAbove", () => {
  const stored = { p50: 1, p90: 2, p95: 3, p99: 4 };
  it("reads its own key, else the nearest stored percentile above, else the largest", () => {
    expect(percentileAtOrAbove(stored, 90)).toBe(2);
    expect(percentileAtOrAbove(stored, 75)).toBe(2);
    expect(percentileAtOrAbove(stored, 96)).toBe(4);
    expect(percentileAtOrAbove(stored, 99.9)).toBe(4);
    expect(percentileAtOrAbove(stored, 10)).toBe(1);
  });

  it("is undefined for an empty record and ignores keys that are not percentiles", () => {
    expect(percentileAtOrAbove({}, 50)).toBeUndefined();
    expect(percentileAtOrAbove({ p: 9, mean: 7, p80: 5 }, 60)).toBe(5);
  });
});

const sample = (at: number, over: Partial<LatencySample> = {}): LatencySample => ({ at, ttftMs: 100, totalMs: 1_100, promptTokens: 1_000, outputTokens: 101, cachedTokens: 0, ...over });

describe("summarize", () => {
  const opts = { percentiles: [50, 90], now: 100_000, windowMs: 60_000, latencyWindowMs: 10_000 };

  it("ignores samples older than the window (one exactly at the edge counts); null when none are left", () => {
    expect(summarize([sample(39_999), sample(10)], opts)).toBeNull();
    expect(summarize([], opts)).toBeNull();
    const envelope = summarize([sample(39_999, { ttftMs: 9_999 }), sample(40_000, { ttftMs: 200 }), sample(99_000, { ttftMs: 400 })], opts)!;
    expect(envelope.samples).toBe(2);
    expect(envelope.ttftMs).toEqual({ p50: 200, p90: 400 });
    expect(envelope.meanTtftMs).toBe(300);
  });

  it("computes percentiles and means of TTFT, total latency and tokens", () => {
    const envelope = summarize(
      [sample(50_000, { ttftMs: 100, totalMs: 1_000, outputTokens: 10, promptTokens: 100 }), sample(60_000, { ttftMs: 300, totalMs: 3_000, outputTokens: 30, promptTokens: 300 })],
      opts,
    )!;
    expect(envelope).toMatchObject({
      samples: 2,
      ttftMs: { p50: 100, p90: 300 },
      totalMs: { p50: 1_000, p90: 3_000 },
      outputTokens: { p50: 10, p90: 30 },
      meanTtftMs: 200,
      meanTotalMs: 2_000,
      meanPromptTokens: 200,
      meanOutputTokens: 20,
    });
  });

  it("msPerOutputToken is the mean of each sample's (total − ttft) / max(1, output − 1)", () => {
    const envelope = summarize(
      [
        sample(90_000, { ttftMs: 100, totalMs: 1_100, outputTokens: 101 }), // 1,000 ms over 100 tokens past the first: 10
        sample(90_000, { ttftMs: 100, totalMs: 400, outputTokens: 1 }), // one token: divided by 1, 300
        sample(90_000, { ttftMs: 100, totalMs: 150, outputTokens: 0 }), // no tokens: divided by 1, 50
        sample(90_000, { ttftMs: 500, totalMs: 400, outputTokens: 5 }), // total below TTFT (a glitch): 0
      ],
      opts,
    )!;
    expect(envelope.msPerOutputToken).toBe((10 + 300 + 50 + 0) / 4);
  });

  it("cachedRatio is Σ cached ÷ Σ prompt over the window, 0 with no prompt tokens", () => {
    const envelope = summarize([sample(90_000, { promptTokens: 1_000, cachedTokens: 600 }), sample(90_000, { promptTokens: 3_000, cachedTokens: 200 }), sample(1, { promptTokens: 1, cachedTokens: 1 })], opts)!;
    expect(envelope.cachedRatio).toBe(800 / 4_000);
    expect(summarize([sample(90_000, { promptTokens: 0, cachedTokens: 0 })], opts)!.cachedRatio).toBe(0);
  });

  it("recent holds TTFT over the latency window only", () => {
    const envelope = summarize([sample(50_000, { ttftMs: 5_000 }), sample(90_000, { ttftMs: 100 }), sample(95_000, { ttftMs: 300 })], opts)!;
    expect(envelope.recent).toEqual({ samples: 2, ttftMs: { p50: 100, p90: 300 } });
    expect(envelope.ttftMs.p90).toBe(5_000);
    const old = summarize([sample(50_000)], opts)!;
    expect(old.recent).toEqual({ samples: 0, ttftMs: {} });
  });
});

describe("trimSamples", () => {
  it("drops samples past the window and keeps the newest maxSamples, in order", () => {
    const samples = [sample(1), sample(50), sample(60), sample(70), sample(80)];
    expect(trimSamples(samples, 100, 50, 10).map((s) => s.at)).toEqual([50, 60, 70, 80]);
    expect(trimSamples(samples, 100, 50, 2).map((s) => s.at)).toEqual([70, 80]);
    expect(trimSamples(samples, 100, 1_000, 3).map((s) => s.at)).toEqual([60, 70, 80]);
    expect(trimSamples(samples, 100, 50, 0)).toEqual([]);
    expect(trimSamples(samples, 1_000, 50, 10)).toEqual([]);
  });

  it("refuses a negative bound", () => {
    expect(() => trimSamples([], 0, 1, -1)).toThrow(RangeError);
  });

  it("the per-route bound is 2,000", () => {
    const many = Array.from({ length: MAX_SAMPLES_PER_ROUTE + 5 }, (_, i) => sample(i));
    const kept = trimSamples(many, MAX_SAMPLES_PER_ROUTE + 5, 1e9, MAX_SAMPLES_PER_ROUTE);
    expect(MAX_SAMPLES_PER_ROUTE).toBe(2_000);
    expect(kept).toHaveLength(2_000);
    expect(kept[0]!.at).toBe(5);
  });
});
