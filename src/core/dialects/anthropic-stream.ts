/**
 * A chat-completions stream as Anthropic's event stream, built chunk by chunk:
 *
 *   message_start, ping                       at once (usage 0: the real counts come at the end)
 *   content_block_start {text}                at the first text, and again after a tool call
 *   content_block_delta text_delta            each piece of text
 *   content_block_start {tool_use}            when a tool call's name is known; its arguments
 *   content_block_delta input_json_delta      as they arrive, each piece as it came
 *   content_block_stop                        when the next block starts, or at the end
 *   message_delta {stop_reason, usage}        at the end: the upstream's usage chunk
 *                                             (input_tokens, output_tokens, cache reads)
 *   message_stop
 *
 * Several tool calls in one turn are one tool_use block each, in the upstream's order. A
 * piece of arguments for a call whose block was already closed (an upstream that
 * interleaves calls) is still sent, on that call's own block index.
 */
import { estimateTokens } from "../routewise/tokens";
import type { AnthropicFrame } from "./anthropic-answer";
import { anthropicUsage, stopReason } from "./anthropic-answer";
import type { ChatChunk, ChatToolCallDelta, ChatUsage } from "./chat";
import { isRecord } from "./chat";
import type { DialectEvent, StreamTranslator } from "./translator";
import { nameFrom, ToolPieces } from "./tool-pieces";

interface ToolCall {
  id: string;
  name: string;
  /** Arguments that came before the call's name (its block cannot start without one). */
  held: string;
  block: number | null;
}

export class AnthropicStream implements StreamTranslator {
  readonly #frame: AnthropicFrame;
  #blocks = 0;
  #open: number | null = null;
  #openIsText = false;
  readonly #pieces = new ToolPieces();
  #refused = false;
  readonly #tools = new Map<number, ToolCall>();
  #finish: string | null = null;
  #matched: unknown = null;
  #usage: ChatUsage | null = null;
  #chars = 0;

  constructor(frame: AnthropicFrame) {
    this.#frame = frame;
  }

  start(): DialectEvent[] {
    const message = { id: this.#frame.id, type: "message", role: "assistant", model: this.#frame.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return [
      { event: "message_start", data: { type: "message_start", message } },
      { event: "ping", data: { type: "ping" } },
    ];
  }

  push(chunk: ChatChunk): DialectEvent[] {
    const out: DialectEvent[] = [];
    if (isRecord(chunk.usage)) this.#usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    // OpenAI's refusal streams as text too (the client has nothing else to show); the stop says why.
    for (const [text, refusal] of [[delta.content, false], [delta.refusal, true]] as const) {
      if (typeof text !== "string" || text === "") continue;
      if (refusal) this.#refused = true;
      if (this.#open === null || !this.#openIsText) this.#startBlock(out, { type: "text", text: "" }, true);
      this.#chars += text.length;
      out.push(blockDelta(this.#open!, { type: "text_delta", text }));
    }
    if (Array.isArray(delta.tool_calls)) delta.tool_calls.forEach((piece, position) => isRecord(piece) && this.#toolPiece(out, piece, position));
    if (typeof choice.finish_reason === "string") {
      this.#finish = choice.finish_reason;
      this.#matched = choice.stop_reason;
    }
    return out;
  }

  /** The upstream's stream ended: every block closed, the stop reason and usage, message_stop. */
  finish(): DialectEvent[] {
    const out: DialectEvent[] = [];
    for (const call of this.#tools.values()) if (call.block === null) this.#startTool(out, call); // a call that never named itself
    this.#closeOpen(out);
    const calls = this.#tools.size > 0 && this.#finish !== "length";
    const stop = calls ? { reason: "tool_use" as const, sequence: null } : this.#refused ? { reason: "refusal" as const, sequence: null } : stopReason(this.#finish, this.#matched, this.#frame.stopSequences);
    const usage = anthropicUsage(this.#usage, estimateTokens(this.#chars));
    out.push({ event: "message_delta", data: { type: "message_delta", delta: { stop_reason: stop.reason, stop_sequence: stop.sequence }, usage } });
    out.push({ event: "message_stop", data: { type: "message_stop" } });
    return out;
  }

  /** The stream broke off: Anthropic's error event, which its clients raise as an error. */
  fail(message: string): DialectEvent[] {
    return [{ event: "error", data: { type: "error", error: { type: "api_error", message } } }];
  }

  #toolPiece(out: DialectEvent[], piece: ChatToolCallDelta, position: number): void {
    const index = this.#pieces.indexOf(piece, position);
    const fn = isRecord(piece.function) ? piece.function : {};
    let call = this.#tools.get(index);
    if (!call) {
      call = { id: typeof piece.id === "string" && piece.id !== "" ? piece.id : `toolu_${this.#frame.id}_${index}`, name: "", held: "", block: null };
      this.#tools.set(index, call);
    }
    call.name = nameFrom(call.name, piece);
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    this.#chars += args.length;
    if (call.block === null) {
      call.held += args;
      if (call.name !== "") this.#startTool(out, call);
    } else if (args !== "") {
      out.push(blockDelta(call.block, { type: "input_json_delta", partial_json: args }));
    }
  }

  #startTool(out: DialectEvent[], call: ToolCall): void {
    call.block = this.#startBlock(out, { type: "tool_use", id: call.id, name: call.name, input: {} }, false);
    if (call.held !== "") out.push(blockDelta(call.block, { type: "input_json_delta", partial_json: call.held }));
    call.held = "";
  }

  #startBlock(out: DialectEvent[], block: Record<string, unknown>, text: boolean): number {
    this.#closeOpen(out);
    const index = this.#blocks++;
    out.push({ event: "content_block_start", data: { type: "content_block_start", index, content_block: block } });
    this.#open = index;
    this.#openIsText = text;
    return index;
  }

  #closeOpen(out: DialectEvent[]): void {
    if (this.#open === null) return;
    out.push({ event: "content_block_stop", data: { type: "content_block_stop", index: this.#open } });
    this.#open = null;
  }
}

function blockDelta(index: number, delta: Record<string, unknown>): DialectEvent {
  return { event: "content_block_delta", data: { type: "content_block_delta", index, delta } };
}
