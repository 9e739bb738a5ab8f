/** What a RouteWise request commits the operator's account to: the prompt estimate over the whole body, n, tiers, unpriced content, usage asked for. */
import { describe, expect, it } from "vitest";
import { hidesUsageChunk, meteredRequest, requestTerms } from "../../src/core/routewise/request-terms";
import { estimatePromptTokens, IMAGE_PART_TOKENS } from "../../src/core/routewise/tokens";

describe("the prompt estimate", () => {
  it("counts every string of the body but the model name, wherever it is", () => {
    expect(estimatePromptTokens({ model: "m".repeat(400), messages: [{ role: "user", content: "abcd".repeat(10) }] })).toBe(11); // 4 + 40 chars
    expect(estimatePromptTokens({ messages: [{ role: "user", content: [{ type: "input_text", text: "x".repeat(4_000) }] }] })).toBeGreaterThanOrEqual(1_000);
    expect(estimatePromptTokens({ messages: [], tools: [{ type: "function", function: { name: "f", description: "d".repeat(4_000) } }] })).toBeGreaterThanOrEqual(1_000);
    expect(estimatePromptTokens({ messages: [], response_format: { json_schema: { schema: { description: "s".repeat(4_000) } } } })).toBeGreaterThanOrEqual(1_000);
  });

  it("counts an image part as IMAGE_PART_TOKENS whatever its size, and token ids one each", () => {
    const image = (url: string) => ({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url, detail: "high" } }] }] });
    const small = estimatePromptTokens(image("https://example.com/a.png"));
    const large = estimatePromptTokens(image(`data:image/png;base64,${"A".repeat(1 << 20)}`));
    expect(small).toBe(large);
    expect(large).toBeGreaterThanOrEqual(IMAGE_PART_TOKENS);
    expect(large).toBeLessThan(IMAGE_PART_TOKENS + 10);
    expect(estimatePromptTokens({ prompt: [[1, 2, 3], [4, 5]] })).toBe(5);
    expect(estimatePromptTokens({ prompt: [1, 2, 3], max_tokens: 1_000_000, temperature: 2 })).toBe(3);
  });
});

describe("request terms", () => {
  it("prices n and best_of as that many answers, and refuses what is not an integer from 1 to 128", () => {
    expect(requestTerms({ messages: [] })).toMatchObject({ ok: true, choices: 1 });
    expect(requestTerms({ messages: [], n: 8 })).toMatchObject({ ok: true, choices: 8 });
    expect(requestTerms({ prompt: "x", n: 2, best_of: 5 })).toMatchObject({ ok: true, choices: 5 });
    for (const n of [0, -1, 1.5, "2", 129, Number.NaN, 1e308]) expect(requestTerms({ messages: [], n }), String(n)).toMatchObject({ ok: false, code: "invalid_n", param: "n" });
    expect(requestTerms({ prompt: "x", best_of: 0 })).toMatchObject({ ok: false, param: "best_of" });
  });

  it("passes the auto and default tiers and refuses any other", () => {
    for (const service_tier of ["auto", "default", null]) expect(requestTerms({ messages: [], service_tier }).ok).toBe(true);
    for (const service_tier of ["priority", "flex", "scale", "", 1]) expect(requestTerms({ messages: [], service_tier })).toMatchObject({ ok: false, code: "unsupported_service_tier", param: "service_tier" });
  });

  it("refuses audio in or out, file parts and web search", () => {
    const part = (type: string) => ({ messages: [{ role: "user", content: [{ type }] }] });
    expect(requestTerms(part("input_audio"))).toMatchObject({ ok: false, code: "unpriced_content", param: "messages" });
    expect(requestTerms(part("file"))).toMatchObject({ ok: false, code: "unpriced_content", param: "messages" });
    expect(requestTerms({ messages: [], modalities: ["text", "audio"] })).toMatchObject({ ok: false, param: "modalities" });
    expect(requestTerms({ messages: [], audio: { voice: "alloy" } })).toMatchObject({ ok: false, param: "audio" });
    expect(requestTerms({ messages: [], web_search_options: {} })).toMatchObject({ ok: false, param: "web_search_options" });
    expect(requestTerms({ messages: [], modalities: ["text"] }).ok).toBe(true);
  });
});

describe("the body sent to a route", () => {
  it("asks a stream for usage, and says whether the client asked for it itself", () => {
    expect(meteredRequest({ model: "public", stream: false }, "upstream")).toEqual({ body: { model: "upstream", stream: false }, hideUsageChunk: false });
    expect(meteredRequest({ stream: true }, "u")).toEqual({ body: { model: "u", stream: true, stream_options: { include_usage: true } }, hideUsageChunk: true });
    expect(meteredRequest({ stream: true, stream_options: { include_usage: false, other: 1 } }, "u")).toEqual({ body: { model: "u", stream: true, stream_options: { include_usage: true, other: 1 } }, hideUsageChunk: true });
    expect(meteredRequest({ stream: true, stream_options: { include_usage: true } }, "u").hideUsageChunk).toBe(false);
    for (const body of [{ stream: false }, { stream: true }, { stream: true, stream_options: { include_usage: false } }, { stream: true, stream_options: { include_usage: true } }, { stream: true, stream_options: [] }]) {
      expect(hidesUsageChunk(body), JSON.stringify(body)).toBe(meteredRequest(body, "u").hideUsageChunk);
    }
  });
});
