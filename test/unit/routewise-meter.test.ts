import { describe, expect, it } from "vitest";
import type { MeterEnd } from "../../src/app/engine/usage-meter";
import { MeteredBody, usageOfJsonBody } from "../../src/app/engine/usage-meter";

const encoder = new TextEncoder();
const streamOf = (chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });

async function meter(chunks: string[], eventStream: boolean, hideUsageChunk = false) {
  let end: MeterEnd | null = null;
  const body = new MeteredBody(streamOf(chunks), eventStream, (e) => (end = e), hideUsageChunk);
  const text = await new Response(body.stream()).text();
  return { text, end: end as MeterEnd | null };
}

describe("usage metering", () => {
  it("reads a JSON answer's usage, cached tokens included, and passes the bytes through unchanged", async () => {
    const json = JSON.stringify({ choices: [{ message: { content: "hello" } }], usage: { prompt_tokens: 12, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 4 } } });
    const { text, end } = await meter([json.slice(0, 10), json.slice(10)], false);
    expect(text).toBe(json);
    expect(end).toEqual({ end: "complete", usage: { promptTokens: 12, outputTokens: 7, cachedTokens: 4, reported: true } });
  });

  it("reads an event stream's usage chunk, even split across reads", async () => {
    const sse = ['data: {"choices":[{"delta":{"content":"a"}}]}\n\n', 'data: {"choices":[],"usage":{"prompt_tokens":3,', '"completion_tokens":9}}\n\ndata: [DONE]\n\n'];
    const { end } = await meter(sse, true);
    expect(end?.usage).toEqual({ promptTokens: 3, outputTokens: 9, cachedTokens: 0, reported: true });
  });

  it("estimates output without a usage object: one token per content chunk, or a quarter of a JSON answer's characters", async () => {
    const chunks = Array.from({ length: 5 }, (_, i) => `data: {"choices":[{"delta":{"content":"t${i}"}}],"usage":null}\n\n`);
    expect((await meter([...chunks, "data: [DONE]\n\n"], true)).end?.usage).toEqual({ promptTokens: null, outputTokens: 5, cachedTokens: 0, reported: false });
    const json = JSON.stringify({ choices: [{ message: { content: "x".repeat(40) } }] });
    expect((await meter([json], false)).end?.usage.outputTokens).toBe(10);
  });

  it("tells a cancelled body (a hedge's loser) apart, once", async () => {
    const ends: MeterEnd[] = [];
    const never = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(encoder.encode('data: {"choices":[{"delta":{"content":"a"}}]}\n\n')) });
    const body = new MeteredBody(never, true, (e) => ends.push(e));
    expect(await body.first()).toBe(true);
    body.cancel();
    body.cancel();
    expect(ends).toEqual([{ end: "cancelled", usage: { promptTokens: null, outputTokens: 1, cachedTokens: 0, reported: false } }]);
  });

  it("hides the usage the router asked for from a client that did not: the usage chunk and every chunk's usage key go, the rest is kept, the meter still reads it", async () => {
    const sse = [
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}\r\n\r\ndata: {"id":"c","choi',
      'ces":[{"index":0,"delta":{"content":"b"}}],"usage":null}\n\n: a comment\n\n',
      'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
      'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\ndata: [DONE]\n\n',
    ];
    const { text, end } = await meter(sse, true, true);
    expect(text).toBe(
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"}}]}\r\n\r\n' +
        'data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"}}]}\n\n: a comment\n\n' +
        'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
    );
    expect(end?.usage).toEqual({ promptTokens: 3, outputTokens: 2, cachedTokens: 0, reported: true });
    // Asked for by the client: passed on untouched.
    expect((await meter(sse, true, false)).text).toBe(sse.join(""));
  });

  it("hiding usage passes a JSON answer, and an unterminated last event, as they came", async () => {
    const json = JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } });
    expect((await meter([json], false, true)).text).toBe(json);
    expect((await meter(['data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"choi', 'ces":[]}'], true, true)).text).toBe('data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: {"choices":[]}');
  });
});

describe("usage metering: numbers out of range", () => {
  it("discards a usage object with a count that is not a whole number from 0 to MAX_TOKENS_PER_REQUEST, and estimates instead", async () => {
    for (const bad of [1e308, -1, "lots", 10_000_001, 0.5]) {
      const json = JSON.stringify({ choices: [{ message: { content: "x".repeat(40) } }], usage: { prompt_tokens: 12, completion_tokens: bad } });
      expect((await meter([json], false)).end?.usage, String(bad)).toEqual({ promptTokens: null, outputTokens: 10, cachedTokens: 0, reported: false, discarded: true });
      const sse = ['data: {"choices":[{"delta":{"content":"a"}}]}\n\n', `data: {"choices":[],"usage":{"prompt_tokens":${JSON.stringify(bad)},"completion_tokens":9}}\n\n`, "data: [DONE]\n\n"];
      expect((await meter(sse, true)).end?.usage, String(bad)).toEqual({ promptTokens: null, outputTokens: 1, cachedTokens: 0, reported: false, discarded: true });
    }
    const cached = JSON.stringify({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 1e308 } } });
    expect((await meter([cached], false)).end?.usage.discarded).toBe(true);
  });
});

describe("a JSON answer read whole (usageOfJsonBody)", () => {
  const bytes = (text: string) => encoder.encode(text).buffer as ArrayBuffer;

  it("reads the usage object and the model as a whole parse would", () => {
    const json = JSON.stringify({ id: "c", model: "gpt-x", choices: [{ message: { content: "hello" } }], usage: { prompt_tokens: 12, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 4 } } });
    expect(usageOfJsonBody(bytes(json))).toEqual({ promptTokens: 12, outputTokens: 7, cachedTokens: 4, reported: true, model: "gpt-x" });
    const anthropic = JSON.stringify({ id: "m", model: "claude-x", content: [{ type: "text", text: "hi" }], usage: { input_tokens: 5, output_tokens: 3, cache_read_input_tokens: 2 } });
    expect(usageOfJsonBody(bytes(anthropic))).toEqual({ promptTokens: 7, outputTokens: 3, cachedTokens: 2, reported: true, model: "claude-x" });
  });

  it("reads an embeddings answer's usage: its input tokens, no output", () => {
    const json = JSON.stringify({ object: "list", model: "emb", data: [{ embedding: Array.from({ length: 64 }, (_, i) => i / 64), index: 0 }], usage: { prompt_tokens: 8, total_tokens: 8 } });
    expect(usageOfJsonBody(bytes(json))).toEqual({ promptTokens: 8, outputTokens: 0, cachedTokens: 0, reported: true, model: "emb" });
  });

  it("is not fooled by a usage-like text inside a string after the real usage, nor by the word as a value", () => {
    const spoof = '{"choices":[{"message":{"content":"hello"}}],"usage":{"prompt_tokens":1,"completion_tokens":2},"note":"x \\"usage\\":{\\"completion_tokens\\":999}"}';
    expect(JSON.parse(spoof).note).toContain('"usage"');
    expect(usageOfJsonBody(bytes(spoof))).toMatchObject({ promptTokens: 1, outputTokens: 2, reported: true });
    const word = JSON.stringify({ choices: [{ message: { content: "usage" } }] });
    expect(usageOfJsonBody(bytes(word))).toEqual({ promptTokens: null, outputTokens: 2, cachedTokens: 0, reported: false });
  });

  it("estimates from the content when there is no usage, and discards an out-of-range count", () => {
    expect(usageOfJsonBody(bytes(JSON.stringify({ choices: [{ message: { content: "x".repeat(40) } }] })))).toMatchObject({ outputTokens: 10, reported: false });
    expect(usageOfJsonBody(bytes(JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1e308 } })))).toMatchObject({ reported: false, discarded: true });
  });
});
