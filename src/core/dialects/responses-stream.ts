/**
 * A chat-completions stream as the Responses API's event stream, built chunk by chunk,
 * every event numbered (`sequence_number` from 0):
 *
 *   response.created, response.in_progress         at once
 *   response.output_item.added {message}           at the first text (and at text after a call)
 *   response.content_part.added {output_text}
 *   response.output_text.delta                     each piece of text
 *   response.output_text.done, content_part.done,  when a tool call starts, or at the end
 *   response.output_item.done {message}
 *   response.output_item.added {function_call}     when a call's name is known
 *   response.function_call_arguments.delta         each piece of its arguments, as it came
 *   response.function_call_arguments.done,         at the end (calls stay open until then, so
 *   response.output_item.done {function_call}      an upstream may interleave their pieces)
 *   response.completed | response.incomplete       with the whole output and the usage
 *   response.failed                                when the upstream's stream broke off
 */
import { estimateTokens } from "../routewise/tokens";
import type { ChatChunk, ChatToolCallDelta, ChatUsage } from "./chat";
import { isRecord } from "./chat";
import type { OutputItem, ResponsesFrame } from "./responses-answer";
import { callArguments, callItemId, messageItemId, outputTextPart, refusalPart, responseObject, responseStatus, responsesUsage } from "./responses-answer";
import type { DialectEvent, StreamTranslator } from "./translator";
import { nameFrom, ToolPieces } from "./tool-pieces";

interface OpenMessage {
  outputIndex: number;
  item: Extract<OutputItem, { type: "message" }>;
  text: string;
}

interface Call {
  outputIndex: number | null;
  item: Extract<OutputItem, { type: "function_call" }>;
  /** Arguments that came before the call's name (its item cannot be added without one). */
  held: string;
}

export class ResponsesStream implements StreamTranslator {
  readonly #frame: ResponsesFrame;
  #seq = 0;
  readonly #output: OutputItem[] = [];
  #message: OpenMessage | null = null;
  #refusal = "";
  #messages = 0;
  readonly #pieces = new ToolPieces();
  readonly #calls = new Map<number, Call>();
  #finish: string | null = null;
  #usage: ChatUsage | null = null;
  #chars = 0;

  constructor(frame: ResponsesFrame) {
    this.#frame = frame;
  }

  start(): DialectEvent[] {
    const response = responseObject(this.#frame, "in_progress", []);
    return [this.#event("response.created", { response }), this.#event("response.in_progress", { response })];
  }

  push(chunk: ChatChunk): DialectEvent[] {
    const out: DialectEvent[] = [];
    if (isRecord(chunk.usage)) this.#usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string" && delta.content !== "") this.#text(out, delta.content);
    if (typeof delta.refusal === "string") {
      this.#refusal += delta.refusal;
      this.#chars += delta.refusal.length;
    }
    if (Array.isArray(delta.tool_calls)) delta.tool_calls.forEach((piece, position) => isRecord(piece) && this.#toolPiece(out, piece, position));
    if (typeof choice.finish_reason === "string") this.#finish = choice.finish_reason;
    return out;
  }

  finish(): DialectEvent[] {
    const out: DialectEvent[] = [];
    this.#closeMessage(out);
    if (this.#refusal !== "") this.#refuse(out);
    const cut = responseStatus(this.#finish).status === "incomplete";
    for (const call of this.#calls.values()) {
      if (call.outputIndex === null) this.#addCall(out, call); // a call that never named itself
      const { item } = call;
      item.arguments = callArguments(item.arguments);
      // Cut off with the response (max_output_tokens): its arguments may be half an object, and an agent must not run it.
      item.status = cut ? "incomplete" : "completed";
      out.push(this.#event("response.function_call_arguments.done", { item_id: item.id, output_index: call.outputIndex, arguments: item.arguments }));
      out.push(this.#event("response.output_item.done", { output_index: call.outputIndex, item: { ...item } }));
    }
    const { status, incomplete } = responseStatus(this.#finish);
    const response = responseObject(this.#frame, status, this.#output.map((item) => ({ ...item })), { usage: responsesUsage(this.#usage, estimateTokens(this.#chars)), incomplete });
    out.push(this.#event(status === "incomplete" ? "response.incomplete" : "response.completed", { response }));
    return out;
  }

  /** The response so far, failed: what was streamed stays in its output, its open items incomplete. */
  fail(message: string): DialectEvent[] {
    const open = this.#message;
    const output = this.#output.map((item): OutputItem => {
      if (item === open?.item) return { ...item, status: "incomplete", content: [outputTextPart(open.text)] };
      return item.status === "in_progress" ? { ...item, status: "incomplete" } : { ...item };
    });
    const response = responseObject(this.#frame, "failed", output, { error: { code: "server_error", message } });
    return [this.#event("response.failed", { response })];
  }

  #text(out: DialectEvent[], piece: string): void {
    this.#chars += piece.length;
    if (this.#message === null) {
      const item: OpenMessage["item"] = { type: "message", id: messageItemId(this.#frame, this.#messages++), status: "in_progress", role: "assistant", content: [] };
      const outputIndex = this.#output.push(item) - 1;
      this.#message = { outputIndex, item, text: "" };
      out.push(this.#event("response.output_item.added", { output_index: outputIndex, item: { ...item, content: [] } }));
      out.push(this.#event("response.content_part.added", { item_id: item.id, output_index: outputIndex, content_index: 0, part: outputTextPart("") }));
    }
    const m = this.#message;
    m.text += piece;
    out.push(this.#event("response.output_text.delta", { item_id: m.item.id, output_index: m.outputIndex, content_index: 0, delta: piece, logprobs: [] }));
  }

  /** The model declined (chat's `refusal`): a message item of its own holding the refusal part, streamed at the end. */
  #refuse(out: DialectEvent[]): void {
    const item: OpenMessage["item"] = { type: "message", id: messageItemId(this.#frame, this.#messages++), status: "in_progress", role: "assistant", content: [] };
    const outputIndex = this.#output.push(item) - 1;
    const where = { item_id: item.id, output_index: outputIndex, content_index: 0 };
    out.push(this.#event("response.output_item.added", { output_index: outputIndex, item: { ...item, content: [] } }));
    out.push(this.#event("response.content_part.added", { ...where, part: refusalPart("") }));
    out.push(this.#event("response.refusal.delta", { ...where, delta: this.#refusal }));
    out.push(this.#event("response.refusal.done", { ...where, refusal: this.#refusal }));
    const part = refusalPart(this.#refusal);
    out.push(this.#event("response.content_part.done", { ...where, part }));
    item.content = [part];
    item.status = "completed";
    out.push(this.#event("response.output_item.done", { output_index: outputIndex, item: { ...item } }));
  }

  #closeMessage(out: DialectEvent[]): void {
    const m = this.#message;
    if (m === null) return;
    this.#message = null;
    const part = outputTextPart(m.text);
    m.item.content = [part];
    // Cut off by the token limit (or a filter): the item is incomplete too, as the response is.
    m.item.status = responseStatus(this.#finish).status === "incomplete" ? "incomplete" : "completed";
    out.push(this.#event("response.output_text.done", { item_id: m.item.id, output_index: m.outputIndex, content_index: 0, text: m.text, logprobs: [] }));
    out.push(this.#event("response.content_part.done", { item_id: m.item.id, output_index: m.outputIndex, content_index: 0, part }));
    out.push(this.#event("response.output_item.done", { output_index: m.outputIndex, item: { ...m.item } }));
  }

  #toolPiece(out: DialectEvent[], piece: ChatToolCallDelta, position: number): void {
    const index = this.#pieces.indexOf(piece, position);
    const fn = isRecord(piece.function) ? piece.function : {};
    let call = this.#calls.get(index);
    if (!call) {
      const callId = typeof piece.id === "string" && piece.id !== "" ? piece.id : `call_${this.#frame.id}_${index}`;
      call = { outputIndex: null, held: "", item: { type: "function_call", id: callItemId(this.#frame, this.#calls.size), call_id: callId, name: "", arguments: "", status: "in_progress" } };
      this.#calls.set(index, call);
    }
    call.item.name = nameFrom(call.item.name, piece);
    const args = typeof fn.arguments === "string" ? fn.arguments : "";
    this.#chars += args.length;
    if (call.outputIndex === null) {
      call.held += args;
      if (call.item.name !== "") this.#addCall(out, call);
    } else if (args !== "") {
      call.item.arguments += args;
      out.push(this.#event("response.function_call_arguments.delta", { item_id: call.item.id, output_index: call.outputIndex, delta: args }));
    }
  }

  #addCall(out: DialectEvent[], call: Call): void {
    this.#closeMessage(out);
    call.outputIndex = this.#output.push(call.item) - 1;
    out.push(this.#event("response.output_item.added", { output_index: call.outputIndex, item: { ...call.item, arguments: "" } }));
    if (call.held !== "") {
      call.item.arguments += call.held;
      out.push(this.#event("response.function_call_arguments.delta", { item_id: call.item.id, output_index: call.outputIndex, delta: call.held }));
    }
    call.held = "";
  }

  #event(type: string, fields: Record<string, unknown>): DialectEvent {
    return { event: type, data: { type, sequence_number: this.#seq++, ...fields } };
  }
}
