/** What a limited request is predicted to use before it is sent, and OpenAI's reset format. */
import { describe, expect, it } from "vitest";
import { DEFAULT_RESERVED_OUTPUT_TOKENS, duration, predictionFor } from "../../src/app/model-call/limits";

describe("predictionFor", () => {
  it("reserves the prompt estimate plus max_tokens per answer asked for", () => {
    const body = { model: "m", max_tokens: 20, n: 3, messages: [{ role: "user", content: "x".repeat(40) }] };
    expect(predictionFor(body, 0, false)).toEqual({ promptTokens: Math.ceil((4 + 40) / 4), outputTokens: 60, outputBound: 60 });
    // Past OpenAI's 128 too: a pool passes n on as it is, so it must be reserved as it is.
    expect(predictionFor({ ...body, n: 129 }, 0, false).outputTokens).toBe(20 * 129);
    expect(predictionFor({ ...body, n: 100_000 }, 0, false).outputTokens).toBe(20 * 100_000);
    expect(predictionFor({ ...body, n: 1.5 }, 0, false).outputTokens).toBe(20); // not a count: the upstream refuses it
  });

  it("reserves DEFAULT_RESERVED_OUTPUT_TOKENS without max_tokens, none for embeddings, and a raw body by its bytes", () => {
    expect(predictionFor({ messages: [] }, 0, false)).toEqual({ promptTokens: 0, outputTokens: DEFAULT_RESERVED_OUTPUT_TOKENS }); // no bound the request said
    expect(predictionFor({ input: "hello there" }, 0, true)).toEqual({ promptTokens: 3, outputTokens: 0 });
    expect(predictionFor(null, 401, false)).toEqual({ promptTokens: 101, outputTokens: 0 });
  });
});

describe("duration", () => {
  it("words a reset as OpenAI does", () => {
    expect([duration(20), duration(1_000), duration(59_001), duration(360_000), duration(3_723_000)]).toEqual(["20ms", "1s", "1m0s", "6m0s", "1h2m3s"]);
  });
});
