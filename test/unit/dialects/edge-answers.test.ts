/**
 * Answers from upstreams that stretch the chat-completions shape, translated as the official
 * SDKs read them (found by an outside audit with @anthropic-ai/sdk and openai):
 * tool-call names repeated in every piece, pieces without `index`, OpenAI refusals,
 * calls cut off by the token limit, calls without arguments.
 */
import { describe, expect, it } from "vitest";
import { chatToAnthropic } from "../../../src/core/dialects/anthropic-answer";
import { AnthropicStream } from "../../../src/core/dialects/anthropic-stream";
import type { ChatChunk, ChatCompletion } from "../../../src/core/dialects/chat";
import { chatToResponse } from "../../../src/core/dialects/responses-answer";
import { responsesToChat } from "../../../src/core/dialects/responses-request";
import { ResponsesStream } from "../../../src/core/dialects/responses-stream";
import type { StreamTranslator } from "../../../src/core/dialects/translator";

const anthropicFrame = { id: "msg_t", model: "m", stopSequences: [] };
function responsesFrame() {
  const asked = responsesToChat({ model: "m", input: "hi" });
  if (!asked.ok) throw new Error(asked.message);
  return { id: "resp_t", model: asked.model, createdAt: 1, echo: asked.echo };
}
const ch = (delta: Record<string, unknown>, finish: string | null = null): ChatChunk => ({ choices: [{ index: 0, delta, finish_reason: finish }] }) as ChatChunk;
const piece = (p: Record<string, unknown>) => ch({ tool_calls: [p] });

function run(t: StreamTranslator, chunks: ChatChunk[]) {
  const events = [...t.start()];
  for (const chunk of chunks) events.push(...t.push(chunk));
  events.push(...t.finish());
  return events.map((e) => e.data as Record<string, unknown>);
}
const responseOf = (events: Record<string, unknown>[]) => (events.at(-1)!.response as { status: string; output: Record<string, unknown>[] });
const anthropicBlocks = (events: Record<string, unknown>[]) => {
  const blocks: Record<string, unknown>[] = [];
  for (const e of events) {
    if (e.type === "content_block_start") blocks[e.index as number] = { ...(e.content_block as object), json: "" };
    if (e.type === "content_block_delta") {
      const d = e.delta as { type: string; text?: string; partial_json?: string };
      const b = blocks[e.index as number]!;
      if (d.type === "text_delta") b.text = `${b.text as string}${d.text}`;
      else b.json = `${b.json as string}${d.partial_json}`;
    }
  }
  return blocks;
};

describe("tool-call names", () => {
  const repeated = [piece({ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: '{"a":' } }), piece({ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "1}" } }), ch({}, "tool_calls")];
  it("are the latest a piece gives, as the OpenAI SDK reads them, not every piece's run together", () => {
    expect(responseOf(run(new ResponsesStream(responsesFrame()), repeated)).output[0]).toMatchObject({ type: "function_call", name: "f", arguments: '{"a":1}' });
    expect(anthropicBlocks(run(new AnthropicStream(anthropicFrame), repeated))[0]).toMatchObject({ type: "tool_use", name: "f", json: '{"a":1}' });
  });
});

describe("tool-call pieces without index", () => {
  const calls = [piece({ id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }), piece({ id: "call_2", type: "function", function: { name: "g", arguments: '{"b":2}' } }), ch({}, "tool_calls")];
  it("start a new call when they name another id, so two calls stay two", () => {
    const output = responseOf(run(new ResponsesStream(responsesFrame()), calls)).output;
    expect(output.map((o) => [o.call_id, o.name, o.arguments])).toEqual([["call_1", "f", '{"a":1}'], ["call_2", "g", '{"b":2}']]);
    const blocks = anthropicBlocks(run(new AnthropicStream(anthropicFrame), calls));
    expect(blocks.map((b) => [b.id, b.name, b.json])).toEqual([["call_1", "f", '{"a":1}'], ["call_2", "g", '{"b":2}']]);
  });
  it("continue the last call when they name none", () => {
    const continued = [piece({ id: "call_1", function: { name: "f", arguments: '{"a":' } }), piece({ function: { arguments: "1}" } }), ch({}, "tool_calls")];
    expect(responseOf(run(new ResponsesStream(responsesFrame()), continued)).output.map((o) => o.arguments)).toEqual(['{"a":1}']);
  });
});

describe("an OpenAI refusal", () => {
  const whole: ChatCompletion = { choices: [{ message: { content: null, refusal: "I can't help with that." }, finish_reason: "stop" }] };
  const streamed = [ch({ refusal: "I can't " }), ch({ refusal: "help." }), ch({}, "stop")];
  it("is a refusal part on /v1/responses, whole and streamed", () => {
    expect(chatToResponse(whole, responsesFrame())).toMatchObject({ status: "completed", output: [{ type: "message", content: [{ type: "refusal", refusal: "I can't help with that." }] }] });
    const events = run(new ResponsesStream(responsesFrame()), streamed);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["response.refusal.delta", "response.refusal.done"]));
    expect(responseOf(events).output).toEqual([expect.objectContaining({ type: "message", status: "completed", content: [{ type: "refusal", refusal: "I can't help." }] })]);
    const seqs = events.map((e) => e.sequence_number as number);
    expect(seqs).toEqual(seqs.map((_, i) => i)); // still one unbroken sequence
  });
  it("is its words as text and stop_reason refusal on /v1/messages, whole and streamed", () => {
    expect(chatToAnthropic(whole, anthropicFrame)).toMatchObject({ content: [{ type: "text", text: "I can't help with that." }], stop_reason: "refusal" });
    const events = run(new AnthropicStream(anthropicFrame), streamed);
    expect(anthropicBlocks(events)).toEqual([expect.objectContaining({ type: "text", text: "I can't help." })]);
    expect(events.find((e) => e.type === "message_delta")).toMatchObject({ delta: { stop_reason: "refusal" } });
  });
});

describe("function calls on /v1/responses", () => {
  it("cut off by max_output_tokens are incomplete, whole and streamed: an agent must not run half an argument object", () => {
    const cut = [piece({ index: 0, id: "call_1", function: { name: "f", arguments: '{"a":' } }), ch({}, "length")];
    expect(responseOf(run(new ResponsesStream(responsesFrame()), cut))).toMatchObject({ status: "incomplete", output: [{ type: "function_call", status: "incomplete" }] });
    const whole: ChatCompletion = { choices: [{ message: { content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"a":' } }] }, finish_reason: "length" }] };
    expect(chatToResponse(whole, responsesFrame())).toMatchObject({ status: "incomplete", output: [{ type: "function_call", status: "incomplete" }] });
  });
  it("without arguments carry {}, which a client can parse, whole and streamed", () => {
    const bare = [piece({ index: 0, id: "call_1", function: { name: "f" } }), ch({}, "tool_calls")];
    expect(responseOf(run(new ResponsesStream(responsesFrame()), bare)).output[0]).toMatchObject({ arguments: "{}", status: "completed" });
    const whole: ChatCompletion = { choices: [{ message: { content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "" } }] }, finish_reason: "tool_calls" }] };
    expect(chatToResponse(whole, responsesFrame())).toMatchObject({ output: [{ type: "function_call", arguments: "{}" }] });
  });
});

describe("reasoning tokens on /v1/responses", () => {
  const usage = { prompt_tokens: 10, completion_tokens: 50, total_tokens: 60, completion_tokens_details: { reasoning_tokens: 45 } };
  const whole = { id: "c", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage } as unknown as ChatCompletion;

  it("carry the upstream's completion_tokens_details, whole and streamed, never more than the output", () => {
    expect(chatToResponse(whole, responsesFrame())).toMatchObject({ usage: { output_tokens: 50, output_tokens_details: { reasoning_tokens: 45 } } });
    const events = run(new ResponsesStream(responsesFrame()), [ch({ content: "ok" }, "stop"), { choices: [], usage } as unknown as ChatChunk]);
    expect(events.at(-1)!.response).toMatchObject({ usage: { output_tokens_details: { reasoning_tokens: 45 } } });
    const overstated = { ...whole, usage: { ...usage, completion_tokens_details: { reasoning_tokens: 500 } } } as ChatCompletion;
    expect(chatToResponse(overstated, responsesFrame())).toMatchObject({ usage: { output_tokens_details: { reasoning_tokens: 50 } } });
  });
});

describe("reasoning.effort on /v1/responses", () => {
  it("goes upstream as chat's reasoning_effort and comes back in the Response; a value that is no word is refused", () => {
    const asked = responsesToChat({ model: "m", input: "hi", reasoning: { effort: "low", summary: "auto" } });
    if (!asked.ok) throw new Error(asked.message);
    expect(asked.chat.reasoning_effort).toBe("low");
    expect(chatToResponse({ choices: [{ message: { content: "ok" }, finish_reason: "stop" }] } as ChatCompletion, { id: "r", model: "m", createdAt: 1, echo: asked.echo })).toMatchObject({ reasoning: { effort: "low" } });
    const none = responsesToChat({ model: "m", input: "hi" });
    expect(none.ok && "reasoning_effort" in none.chat).toBe(false);
    expect(responsesToChat({ model: "m", input: "hi", reasoning: { effort: "low; drop table" } })).toMatchObject({ ok: false, param: "reasoning.effort" });
  });
});
