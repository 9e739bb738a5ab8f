/**
 * An Anthropic-native upstream's answer as the chat completion its client asked for:
 * the Message whole, or its event stream event by event as chat-completion chunks.
 *
 *   text blocks                   content (joined)
 *   tool_use blocks               tool_calls (input as JSON text; streamed: the
 *                                 input_json_delta pieces as argument pieces, as they came)
 *   stop_reason                   finish_reason: end_turn, stop_sequence, pause_turn → stop;
 *                                 max_tokens → length; tool_use → tool_calls; refusal →
 *                                 content_filter; a matched stop sequence as `stop_reason`
 *   usage                         prompt_tokens = input + cache reads + cache writes;
 *                                 completion_tokens = output; cache reads as cached_tokens
 *   thinking blocks               dropped
 * A stream's usage chunk (`choices: []`) is sent when the client asked for it.
 */
import type { ChatUsage } from "./chat";
import { isRecord, tokenCount } from "./chat";

export interface ChatFrame {
  /** `chatcmpl-…` */
  id: string;
  /** The model as the client named it. */
  model: string;
  /** Seconds since the epoch. */
  created: number;
  /** The client asked for a usage chunk (`stream_options.include_usage`). */
  includeUsage: boolean;
}

const n = tokenCount;

export function finishReason(stop: unknown): string {
  switch (stop) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "stop";
  }
}

/** Anthropic's usage (input without the cache) as chat's (prompt with it). */
export function chatUsage(usage: unknown): ChatUsage & { total_tokens: number } {
  const u = isRecord(usage) ? usage : {};
  const cached = n(u.cache_read_input_tokens);
  const prompt = n(u.input_tokens) + cached + n(u.cache_creation_input_tokens);
  const completion = n(u.output_tokens);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, ...(cached > 0 && { prompt_tokens_details: { cached_tokens: cached } }) };
}

export function anthropicToChatCompletion(message: Record<string, unknown>, frame: ChatFrame): Record<string, unknown> {
  const blocks = Array.isArray(message.content) ? message.content.filter(isRecord) : [];
  const said = blocks.filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text as string).join("");
  const calls = blocks
    .filter((b) => b.type === "tool_use")
    .map((b) => ({ id: typeof b.id === "string" ? b.id : "", type: "function", function: { name: typeof b.name === "string" ? b.name : "", arguments: JSON.stringify(isRecord(b.input) ? b.input : {}) } }));
  const matched = typeof message.stop_sequence === "string" ? { stop_reason: message.stop_sequence } : {};
  return {
    id: frame.id,
    object: "chat.completion",
    created: frame.created,
    model: frame.model,
    choices: [{ index: 0, message: { role: "assistant", content: said === "" && calls.length > 0 ? null : said, ...(calls.length > 0 && { tool_calls: calls }) }, finish_reason: finishReason(message.stop_reason), ...matched }],
    usage: chatUsage(message.usage),
  };
}

/** Anthropic's stream events, in order, as chat-completion chunks (each a `data:` payload; "[DONE]" last). */
export class AnthropicToChatStream {
  readonly #frame: ChatFrame;
  /** Content block index → its tool call's index among the calls. */
  readonly #calls = new Map<number, number>();
  #usage: Record<string, unknown> = {};
  #done = false;
  #failed = false;

  constructor(frame: ChatFrame) {
    this.#frame = frame;
  }

  /** True once message_stop came: the answer is whole. */
  get done(): boolean {
    return this.#done;
  }

  /** True once the stream said how it ended: whole, or with an `error` event already told to the client. */
  get ended(): boolean {
    return this.#done || this.#failed;
  }

  /** One event's chunks; an `error` event becomes chat's error payload. */
  push(type: string, data: Record<string, unknown>): (Record<string, unknown> | "[DONE]")[] {
    switch (type) {
      case "message_start": {
        const message = isRecord(data.message) ? data.message : {};
        if (isRecord(message.usage)) this.#usage = { ...message.usage };
        return [this.#chunk({ role: "assistant", content: "" })];
      }
      case "content_block_start": {
        const block = isRecord(data.content_block) ? data.content_block : {};
        if (block.type !== "tool_use") return [];
        const index = this.#calls.size;
        this.#calls.set(n(data.index), index);
        return [this.#chunk({ tool_calls: [{ index, id: block.id, type: "function", function: { name: block.name, arguments: "" } }] })];
      }
      case "content_block_delta": {
        const delta = isRecord(data.delta) ? data.delta : {};
        if (delta.type === "text_delta" && typeof delta.text === "string") return [this.#chunk({ content: delta.text })];
        const call = this.#calls.get(n(data.index));
        if (delta.type === "input_json_delta" && typeof delta.partial_json === "string" && call !== undefined) {
          return [this.#chunk({ tool_calls: [{ index: call, function: { arguments: delta.partial_json } }] })];
        }
        return []; // thinking and signatures: chat completions have no place for them
      }
      case "message_delta": {
        const delta = isRecord(data.delta) ? data.delta : {};
        if (isRecord(data.usage)) for (const [k, v] of Object.entries(data.usage)) if (v !== null && v !== undefined) this.#usage[k] = v;
        const matched = typeof delta.stop_sequence === "string" ? { stop_reason: delta.stop_sequence } : {};
        return [{ ...this.#base(), choices: [{ index: 0, delta: {}, finish_reason: finishReason(delta.stop_reason), ...matched }] }];
      }
      case "message_stop":
        this.#done = true;
        return [...(this.#frame.includeUsage ? [{ ...this.#base(), choices: [], usage: chatUsage(this.#usage) }] : []), "[DONE]"];
      case "error": {
        this.#failed = true;
        const error = isRecord(data.error) ? data.error : {};
        return [{ error: { message: typeof error.message === "string" ? error.message : "The upstream reported an error mid-stream", type: typeof error.type === "string" ? error.type : "api_error" } }];
      }
      default:
        return []; // ping, and events this router does not know
    }
  }

  #base() {
    return { id: this.#frame.id, object: "chat.completion.chunk", created: this.#frame.created, model: this.#frame.model };
  }

  #chunk(delta: Record<string, unknown>): Record<string, unknown> {
    return { ...this.#base(), choices: [{ index: 0, delta, finish_reason: null }] };
  }
}
