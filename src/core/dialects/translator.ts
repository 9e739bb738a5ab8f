/**
 * What the stream plumbing (src/app/model-call/dialect-answer.ts) needs of a dialect's
 * stream translator: a small pure state machine fed the upstream's chat-completion chunks
 * in order, giving back the events its client reads.
 */
import type { ChatChunk } from "./chat";

export interface DialectEvent {
  /** The SSE `event:` name. */
  event: string;
  data: Record<string, unknown>;
}

export interface StreamTranslator {
  /** What the client gets before the upstream's first chunk. */
  start(): DialectEvent[];
  push(chunk: ChatChunk): DialectEvent[];
  /** The upstream's stream ended in order. */
  finish(): DialectEvent[];
  /** The upstream's stream broke off, or could not be read: the dialect's own failure event. */
  fail(message: string): DialectEvent[];
}
