import { describe, expect, it } from "vitest";
import { OutputPredictorSchema } from "../../src/core/config/routewise-schema";
import { actualCost, expectedCost } from "../../src/core/routewise/cost";
import { predictOutputTokens } from "../../src/core/routewise/output-predictor";
import type { Envelope, RouteInput } from "../../src/core/routewise/types";

function envelope(over: Partial<Envelope> = {}): Envelope {
  return {
    samples: 50,
    ttftMs: { p50: 200, p95: 600 },
    totalMs: { p50: 2_000, p95: 5_000 },
    outputTokens: { p50: 150, p90: 400, p99: 900 },
    meanTtftMs: 250,
    meanTotalMs: 2_500,
    meanPromptTokens: 1_000,
    meanOutputTokens: 180,
    msPerOutputToken: 12,
    cachedRatio: 0.5,
    recent: { samples: 10, ttftMs: { p50: 200, p95: 600 } },
    ...over,
  };
}

// Prices chosen as powers of two so the sums below are exact in binary floating point.
const pricing = { input: 2 ** -20, output: 2 ** -18, cached_input: 2 ** -22 };
const onDemand = (over: Partial<RouteInput> = {}): RouteInput => ({ id: "r", type: "on_demand", pricing, envelope: envelope(), healthy: true, ...over });
const tokens = { prompt: 1_000, output: 200 };

describe("expectedCost", () => {
  it("on_demand: input × prompt + output × output when no prefix cache is assumed", () => {
    expect(expectedCost(onDemand(), tokens, { prefixCache: false })).toBe(1_000 * 2 ** -20 + 200 * 2 ** -18);
  });

  it("with prefix_cache, the envelope's cached share of the prompt is priced at cached_input", () => {
    // cachedRatio 0.5: 500 tokens at input, 500 at cached_input.
    expect(expectedCost(onDemand(), tokens, { prefixCache: true })).toBe(500 * 2 ** -20 + 500 * 2 ** -22 + 200 * 2 ** -18);
  });

  it("with prefix_cache but no cached_input price, cached tokens cost input", () => {
    const route = onDemand({ pricing: { input: 2 ** -20, output: 2 ** -18 } });
    expect(expectedCost(route, tokens, { prefixCache: true })).toBe(1_000 * 2 ** -20 + 200 * 2 ** -18);
  });

  it("with prefix_cache and no envelope, nothing is assumed cached", () => {
    expect(expectedCost(onDemand({ envelope: null }), tokens, { prefixCache: true })).toBe(1_000 * 2 ** -20 + 200 * 2 ** -18);
  });

  it("quota capacity costs nothing, priced or not", () => {
    expect(expectedCost(onDemand({ type: "quota" }), tokens, { prefixCache: true })).toBe(0);
  });

  it("concurrency: per-token price when set, else free", () => {
    expect(expectedCost(onDemand({ type: "concurrency" }), tokens, { prefixCache: false })).toBe(1_000 * 2 ** -20 + 200 * 2 ** -18);
    expect(expectedCost(onDemand({ type: "concurrency", pricing: undefined }), tokens, { prefixCache: false })).toBe(0);
  });
});

describe("actualCost", () => {
  const usage = { promptTokens: 1_000, outputTokens: 200, cachedTokens: 256 };

  it("bills cached tokens at cached_input and the rest of the prompt at input", () => {
    expect(actualCost(pricing, "on_demand", usage)).toBe(744 * 2 ** -20 + 256 * 2 ** -22 + 200 * 2 ** -18);
    expect(actualCost(pricing, "concurrency", usage)).toBe(744 * 2 ** -20 + 256 * 2 ** -22 + 200 * 2 ** -18);
  });

  it("cached tokens cost input when the provider has no cached price", () => {
    expect(actualCost({ input: 2 ** -20, output: 2 ** -18 }, "on_demand", usage)).toBe(1_000 * 2 ** -20 + 200 * 2 ** -18);
  });

  it("never bills more cached tokens than the prompt had", () => {
    expect(actualCost(pricing, "on_demand", { promptTokens: 100, outputTokens: 0, cachedTokens: 500 })).toBe(100 * 2 ** -22);
  });

  it("quota routes and unpriced routes cost 0", () => {
    expect(actualCost(pricing, "quota", usage)).toBe(0);
    expect(actualCost(undefined, "concurrency", usage)).toBe(0);
  });
});

describe("predictOutputTokens", () => {
  const predictor = (over: object) => OutputPredictorSchema.parse(over);

  it("fixed: predictor.tokens, capped by max_tokens", () => {
    expect(predictOutputTokens(predictor({ mode: "fixed", tokens: 300 }), null, envelope())).toBe(300);
    expect(predictOutputTokens(predictor({ mode: "fixed", tokens: 300 }), 100, envelope())).toBe(100);
  });

  it("max_tokens: the request's max_tokens, else predictor.tokens", () => {
    expect(predictOutputTokens(predictor({ mode: "max_tokens", tokens: 300 }), 4_096, envelope())).toBe(4_096);
    expect(predictOutputTokens(predictor({ mode: "max_tokens", tokens: 300 }), null, envelope())).toBe(300);
  });

  it("envelope_mean: the route's mean output, predictor.tokens without an envelope, capped by max_tokens", () => {
    expect(predictOutputTokens(predictor({ mode: "envelope_mean", tokens: 300 }), null, envelope())).toBe(180);
    expect(predictOutputTokens(predictor({ mode: "envelope_mean", tokens: 300 }), null, null)).toBe(300);
    expect(predictOutputTokens(predictor({ mode: "envelope_mean", tokens: 300 }), 50, envelope())).toBe(50);
    expect(predictOutputTokens(predictor({ mode: "envelope_mean", tokens: 300 }), 50, null)).toBe(50);
  });

  it("envelope_percentile: the stored percentile, else the nearest above, else the largest", () => {
    const at = (percentile: number, maxTokens: number | null = null) => predictOutputTokens(predictor({ mode: "envelope_percentile", percentile, tokens: 300 }), maxTokens, envelope());
    expect(at(90)).toBe(400);
    expect(at(60)).toBe(400);
    expect(at(95)).toBe(900);
    expect(at(99.5)).toBe(900);
    expect(at(10)).toBe(150);
    expect(at(99, 500)).toBe(500);
    expect(predictOutputTokens(predictor({ mode: "envelope_percentile", percentile: 90, tokens: 300 }), null, null)).toBe(300);
  });

  it("the schema's default is envelope_mean with 256 tokens before any sample", () => {
    expect(predictOutputTokens(predictor({}), null, null)).toBe(256);
    expect(predictOutputTokens(predictor({}), null, envelope())).toBe(180);
  });
});
