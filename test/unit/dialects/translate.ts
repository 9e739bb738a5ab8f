/** Runs one golden case through its translator, with fixed ids and times so the output is the same every run. */
import { chatToAnthropic } from "../../../src/core/dialects/anthropic-answer";
import { AnthropicToChatStream, anthropicToChatCompletion } from "../../../src/core/dialects/anthropic-to-chat";
import { chatToAnthropicRequest } from "../../../src/core/dialects/chat-to-anthropic";
import { anthropicToChat } from "../../../src/core/dialects/anthropic-request";
import { AnthropicStream } from "../../../src/core/dialects/anthropic-stream";
import { chatToResponse } from "../../../src/core/dialects/responses-answer";
import { responsesToChat } from "../../../src/core/dialects/responses-request";
import { ResponsesStream } from "../../../src/core/dialects/responses-stream";
import type { ChatChunk } from "../../../src/core/dialects/chat";
import type { StreamTranslator } from "../../../src/core/dialects/translator";
import type { Case } from "./cases";

const MESSAGE_ID = "msg_golden";
const RESPONSE_ID = "resp_golden";
const CREATED_AT = 1_700_000_000;
const CHAT_ID = "chatcmpl-golden";

function responsesFrame(request: Record<string, unknown> = { model: "m", input: "hi" }) {
  const asked = responsesToChat(request);
  if (!asked.ok) throw new Error(asked.message);
  return { id: RESPONSE_ID, model: asked.model, createdAt: CREATED_AT, echo: asked.echo };
}

function run(t: StreamTranslator, chunks: ChatChunk[], broken?: boolean) {
  const events = [...t.start()];
  for (const chunk of chunks) events.push(...t.push(chunk));
  events.push(...(broken ? t.fail("The upstream's stream broke off before the answer was complete") : t.finish()));
  return events;
}

export function translate(c: Case): unknown {
  switch (c.kind) {
    case "anthropic_request":
      return anthropicToChat(c.input);
    case "anthropic_answer":
      return chatToAnthropic(c.input, { id: MESSAGE_ID, model: "m", stopSequences: c.stopSequences ?? [] });
    case "anthropic_stream":
      return run(new AnthropicStream({ id: MESSAGE_ID, model: "m", stopSequences: c.stopSequences ?? [] }), c.input, c.broken);
    case "responses_request":
      return responsesToChat(c.input);
    case "responses_answer":
      return chatToResponse(c.input, responsesFrame(c.request));
    case "responses_stream":
      return run(new ResponsesStream(responsesFrame(c.request)), c.input, c.broken);
    case "native_request":
      return chatToAnthropicRequest(c.input, "upstream-name");
    case "native_answer":
      return anthropicToChatCompletion(c.input, { id: CHAT_ID, model: "m", created: CREATED_AT, includeUsage: false });
    case "native_stream": {
      const machine = new AnthropicToChatStream({ id: CHAT_ID, model: "m", created: CREATED_AT, includeUsage: c.includeUsage });
      return c.input.flatMap((e) => machine.push(e.event, e.data));
    }
  }
}
