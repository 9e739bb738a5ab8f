/**
 * The usage meter (src/app/engine/usage-meter.ts) on an Anthropic-native replica's
 * answers: the prompt is input plus cache reads and writes; a stream says it in
 * message_start (under `message`) and its output in message_delta, which repeats no prompt.
 */
import { describe, expect, it } from "vitest";
import type { MeterEnd } from "../../../src/app/engine/usage-meter";
import { MeteredBody } from "../../../src/app/engine/usage-meter";

async function meter(chunks: string[], eventStream: boolean): Promise<MeterEnd | null> {
  const encoder = new TextEncoder();
  let end: MeterEnd | null = null;
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(encoder.encode(c));
      controller.close();
    },
  });
  await new Response(new MeteredBody(source, eventStream, (e) => (end = e)).stream()).text();
  return end;
}

describe("usage metering of Anthropic's Messages answers", () => {
  it("reads a Message's usage, cache reads and writes in the prompt", async () => {
    const message = JSON.stringify({ type: "message", content: [{ type: "text", text: "hi" }], usage: { input_tokens: 10, cache_read_input_tokens: 30, cache_creation_input_tokens: 5, output_tokens: 7 } });
    expect((await meter([message], false))?.usage).toEqual({ promptTokens: 45, outputTokens: 7, cachedTokens: 30, reported: true });
  });

  it("takes a stream's prompt from message_start and its output from message_delta", async () => {
    const events = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":20,"cache_read_input_tokens":4,"output_tokens":1}}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ];
    expect((await meter(events, true))?.usage).toEqual({ promptTokens: 24, outputTokens: 12, cachedTokens: 4, reported: true });
  });
});
