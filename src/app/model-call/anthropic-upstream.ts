/**
 * What a pool sends an Anthropic-native replica (`dialect: anthropic`), and how its
 * answer reaches a client that asked in chat completions: the Message whole, or its event
 * stream translated event by event (src/core/dialects/anthropic-to-chat.ts). A client that
 * asked in Anthropic's own dialect gets the answer untranslated (src/platform/surfaces/dialects.ts).
 */
import { upstreamError } from "../../core/upstream/error-words";
import { AnthropicToChatStream, anthropicToChatCompletion } from "../../core/dialects/anthropic-to-chat";
import type { ChatFrame } from "../../core/dialects/anthropic-to-chat";
import { isRecord } from "../../core/dialects/chat";
import { chatToAnthropicRequest } from "../../core/dialects/chat-to-anthropic";
import type { Refusal } from "../../core/dialects/chat";
import { readUpTo } from "../../lib/bounded-read";
import { SseReader } from "../../lib/sse";

export const MESSAGES_PATH = "/v1/messages";
const MAX_ANSWER_BYTES = 64 * 1024 * 1024; // a non-streamed answer held to translate it: far above any message

/**
 * The body an Anthropic-native replica gets: the client's own Messages body when it spoke
 * Anthropic (only the model renamed), else the chat request translated.
 */
export function anthropicBody(native: Record<string, unknown> | undefined, chat: Record<string, unknown> | null, upstreamModel: string): { ok: true; body: Uint8Array } | Refusal {
  if (native) return { ok: true, body: new TextEncoder().encode(JSON.stringify({ ...native, model: upstreamModel })) };
  if (chat === null) return { ok: false, message: "an Anthropic-native replica takes chat completions or Messages requests only" };
  const translated = chatToAnthropicRequest(chat, upstreamModel);
  return translated.ok ? { ok: true, body: new TextEncoder().encode(JSON.stringify(translated.body)) } : translated;
}

/** An Anthropic-native replica's answer as a chat completion (JSON or chunks), for a client that asked in chat. */
export async function anthropicAsChat(upstream: Response, chat: Record<string, unknown>, model: string): Promise<Response> {
  const headers = new Headers(upstream.headers);
  for (const name of ["content-length", "content-encoding", "content-type", "transfer-encoding"]) headers.delete(name);
  const options = isRecord(chat.stream_options) ? chat.stream_options : {};
  const frame: ChatFrame = { id: `chatcmpl-${crypto.randomUUID().replace(/-/g, "")}`, model, created: Math.floor(Date.now() / 1000), includeUsage: options.include_usage === true };
  const eventStream = (upstream.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
  if (eventStream && upstream.body) {
    headers.set("content-type", "text/event-stream; charset=utf-8");
    return new Response(chatStream(upstream.body, new AnthropicToChatStream(frame)), { status: upstream.status, headers });
  }
  headers.set("content-type", "application/json");
  let parsed: unknown = null;
  try {
    const bytes = await readUpTo(upstream.body, upstream.headers.get("content-length"), MAX_ANSWER_BYTES);
    parsed = bytes === null ? null : JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    parsed = null;
  }
  if (upstream.ok && isRecord(parsed) && parsed.type === "message") return new Response(JSON.stringify(anthropicToChatCompletion(parsed, frame)), { status: upstream.status, headers });
  // An error (or an answer that is not a Message): its message in OpenAI's error shape, its status kept.
  const error = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : {};
  const message = upstream.ok ? "The Anthropic-native replica's answer is not a Message" : upstreamError(parsed, upstream.status).message;
  return new Response(JSON.stringify({ error: { message, type: typeof error.type === "string" ? error.type : "upstream_error", param: null, code: null } }), { status: upstream.ok ? 502 : upstream.status, headers });
}

function chatStream(body: ReadableStream<Uint8Array>, machine: AnthropicToChatStream): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const sse = new SseReader();
  const write = (chunks: (Record<string, unknown> | "[DONE]")[]) => encoder.encode(chunks.map((c) => `data: ${c === "[DONE]" ? c : JSON.stringify(c)}\n\n`).join(""));
  const failed = (message: string) => write([{ error: { message, type: "api_error" } }]);
  const translate = (text: string, end: boolean) => {
    const events = sse.push(text);
    if (end) events.push(...sse.end());
    const out: (Record<string, unknown> | "[DONE]")[] = [];
    for (const event of events) {
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        continue;
      }
      if (!isRecord(data)) continue;
      out.push(...machine.push(event.event ?? (typeof data.type === "string" ? data.type : ""), data));
    }
    return out;
  };
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch {
          controller.enqueue(failed("The upstream's stream broke off before the answer was complete"));
          controller.close();
          return;
        }
        if (next.done) {
          const rest = translate(decoder.decode(), true);
          if (rest.length > 0) controller.enqueue(write(rest));
          if (!machine.ended) controller.enqueue(failed("The upstream's stream ended before the answer was complete")); // one error chunk: an error event already was one
          controller.close();
          return;
        }
        const out = translate(decoder.decode(next.value, { stream: true }), false);
        if (out.length > 0) return controller.enqueue(write(out));
      }
    },
    cancel: (reason) => reader.cancel(reason).catch(() => {}),
  });
}
