/**
 * The reading and writing around the pure translators: the SSE reader over pieces cut
 * anywhere, and the answer plumbing (src/app/model-call/dialect-answer.ts) for a stream
 * the upstream answered whole, an upstream stream that ends before its answer does, and
 * an answer that is not a chat completion.
 */
import { describe, expect, it } from "vitest";
import type { DialectCodec } from "../../../src/app/model-call/dialect-answer";
import { dialectAnswer } from "../../../src/app/model-call/dialect-answer";
import { chatToAnthropic } from "../../../src/core/dialects/anthropic-answer";
import { AnthropicStream } from "../../../src/core/dialects/anthropic-stream";
import { SseReader } from "../../../src/lib/sse";

describe("SseReader", () => {
  it("gives the same events however the text is cut, with CRLF, comments, named and multi-line events", () => {
    const text = ': keep-alive\r\nevent: message_start\r\ndata: {"a":1}\r\n\r\ndata: line one\ndata: line two\n\ndata: [DONE]\n\n';
    const want = [
      { event: "message_start", data: '{"a":1}' },
      { event: null, data: "line one\nline two" },
      { event: null, data: "[DONE]" },
    ];
    for (let cut = 0; cut <= text.length; cut++) {
      const reader = new SseReader();
      expect([...reader.push(text.slice(0, cut)), ...reader.push(text.slice(cut)), ...reader.end()], `cut at ${cut}`).toEqual(want);
    }
  });

  it("gives the last event when the stream ends without its blank line", () => {
    const reader = new SseReader();
    expect(reader.push("data: x")).toEqual([]);
    expect(reader.end()).toEqual([{ event: null, data: "x" }]);
  });
});

const frame = { id: "msg_t", model: "m", stopSequences: [] };
const codec: DialectCodec = { json: (c) => chatToAnthropic(c, frame) as unknown as Record<string, unknown>, stream: () => new AnthropicStream(frame) };
const eventNames = (text: string) => [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);

describe("dialectAnswer", () => {
  it("replays a whole answer as the dialect's stream when the client asked for one, keeping the router's headers", async () => {
    const upstream = Response.json({ choices: [{ message: { content: "Hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1 } }, { headers: { "x-switchyard-replica": "r1" } });
    const answer = await dialectAnswer(upstream, codec, true);
    if (!answer.ok) throw new Error(answer.message);
    expect(answer.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(answer.response.headers.get("x-switchyard-replica")).toBe("r1");
    const text = await answer.response.text();
    expect(eventNames(text)).toEqual(["message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    expect(text).toContain('"usage":{"input_tokens":3,"output_tokens":1}');
  });

  it("ends a stream that stops before its answer finished with the dialect's error event", async () => {
    const body = 'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n';
    const upstream = new Response(body, { headers: { "content-type": "text/event-stream" } });
    const answer = await dialectAnswer(upstream, codec, true);
    if (!answer.ok) throw new Error(answer.message);
    const text = await answer.response.text();
    expect(eventNames(text).at(-1)).toBe("error");
    expect(text).toContain("ended before the answer was complete");
  });

  it("passes an upstream's mid-stream error on as the dialect's error event", async () => {
    const body = 'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\ndata: {"error":{"message":"model crashed"}}\n\n';
    const answer = await dialectAnswer(new Response(body, { headers: { "content-type": "text/event-stream" } }), codec, true);
    if (!answer.ok) throw new Error(answer.message);
    const text = await answer.response.text();
    expect(eventNames(text).at(-1)).toBe("error");
    expect(text).toContain("model crashed");
  });

  it("refuses an answer that is not a chat completion", async () => {
    expect(await dialectAnswer(Response.json({ predictions: [1] }), codec, false)).toEqual({ ok: false, status: 502, message: "The upstream's answer is not a chat completion the router can translate" });
    // Shaped like one but saying nothing readable: not an empty 200 either.
    for (const body of [{ choices: [] }, { choices: [{ message: { role: "assistant", content: 5 } }] }, { choices: [null] }, { choices: [{ delta: {} }] }]) {
      expect(await dialectAnswer(Response.json(body), codec, false), JSON.stringify(body)).toMatchObject({ ok: false, status: 502 });
      expect(await dialectAnswer(Response.json(body), codec, true), JSON.stringify(body)).toMatchObject({ ok: false, status: 502 });
    }
    expect(await dialectAnswer(Response.json({ choices: [{ message: { role: "assistant", content: null, tool_calls: [] } }] }), codec, false)).toMatchObject({ ok: true });
  });
});
