/**
 * A chat-completions answer (what `callModel` returns for a translated request) worded
 * back in the client's dialect: a JSON answer whole, an event stream chunk by chunk as it
 * arrives. The translation itself is pure (src/core/dialects/); this is only the reading,
 * the writing and the ending.
 *
 * The stream's reader going away cancels the upstream's body (which settles the call's
 * accounts, as for any answer); an upstream stream that breaks off, or ends without its
 * answer finishing, ends in the dialect's own failure event, never silently.
 */
import type { ChatChunk, ChatCompletion } from "../../core/dialects/chat";
import { isRecord } from "../../core/dialects/chat";
import type { DialectEvent, StreamTranslator } from "../../core/dialects/translator";
import { readUpTo } from "../../lib/bounded-read";
import { upstreamError } from "../../core/upstream/error-words";
import { SseReader, sseEvent } from "../../lib/sse";

export interface DialectCodec {
  /** A whole chat completion as the dialect's JSON answer. */
  json(completion: ChatCompletion): Record<string, unknown>;
  /** A fresh translator for one streamed answer. */
  stream(): StreamTranslator;
}

/**
 * The answer in the client's dialect, or why there is none: the upstream's own error (its
 * status, and its code and param when it gave them), or an answer that is not a chat
 * completion (502).
 */
export type DialectAnswer = { ok: true; response: Response } | { ok: false; status: number; message: string; code?: string; param?: string };

const MAX_ANSWER_BYTES = 64 * 1024 * 1024; // a non-streamed answer held to translate it: far above any completion

export async function dialectAnswer(upstream: Response, codec: DialectCodec, streamed: boolean): Promise<DialectAnswer> {
  const eventStream = (upstream.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
  const headers = new Headers(upstream.headers);
  for (const name of ["content-length", "content-encoding", "content-type", "transfer-encoding"]) headers.delete(name);
  if (streamed && eventStream && upstream.body && upstream.ok) {
    headers.set("content-type", "text/event-stream; charset=utf-8");
    headers.set("cache-control", "no-cache");
    return { ok: true, response: new Response(translatedStream(upstream.body, codec.stream()), { status: 200, headers }) };
  }
  const parsed = await wholeJson(upstream);
  if (!upstream.ok) {
    // A status the router passed on (a 400 for a prompt too long, …): its message, in the client's error shape.
    return { ok: false, status: upstream.status, ...upstreamError(parsed, upstream.status) };
  }
  const completion = isCompletion(parsed) ? parsed : null;
  if (completion === null) return { ok: false, status: 502, message: "The upstream's answer is not a chat completion the router can translate" };
  if (streamed) {
    // An upstream (or a graph's last step) that answered whole: replayed as one stream.
    headers.set("content-type", "text/event-stream; charset=utf-8");
    const t = codec.stream();
    const events = [...t.start(), ...t.push(asChunk(completion)), ...t.finish()];
    return { ok: true, response: new Response(events.map((e) => sseEvent(e.event, e.data)).join(""), { status: 200, headers }) };
  }
  headers.set("content-type", "application/json");
  return { ok: true, response: new Response(JSON.stringify(codec.json(completion)), { status: 200, headers }) };
}

/**
 * A chat completion the translators can read: a first choice with a message whose content
 * is text or absent. Anything else (`choices: []`, content that is a number) would be
 * translated into an empty answer, a 200 that says nothing of what went wrong.
 */
function isCompletion(parsed: unknown): parsed is ChatCompletion {
  if (!isRecord(parsed) || !Array.isArray(parsed.choices) || parsed.choices.length === 0) return false;
  const choice: unknown = parsed.choices[0];
  if (!isRecord(choice) || !isRecord(choice.message)) return false;
  const content = choice.message.content;
  return content === undefined || content === null || typeof content === "string";
}

async function wholeJson(upstream: Response): Promise<unknown> {
  try {
    const bytes = await readUpTo(upstream.body, upstream.headers.get("content-length"), MAX_ANSWER_BYTES);
    return bytes === null ? null : JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

/** A whole completion as the one chunk that says all of it. */
function asChunk(completion: ChatCompletion): ChatChunk {
  const choice = completion.choices?.[0];
  const message = isRecord(choice?.message) ? choice!.message : {};
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  return {
    choices: [{
      delta: { content: typeof message.content === "string" ? message.content : null, tool_calls: calls.map((c, index) => ({ index, id: c?.id, function: c?.function })) },
      finish_reason: choice?.finish_reason ?? "stop",
      stop_reason: choice?.stop_reason,
    }],
    usage: completion.usage ?? null,
  };
}

function translatedStream(body: ReadableStream<Uint8Array>, translator: StreamTranslator): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const sse = new SseReader();
  let started = false;
  let answered = false; // a finish reason or [DONE] was seen: the answer is whole
  let over = false;
  const write = (events: DialectEvent[]) => (events.length === 0 ? null : encoder.encode(events.map((e) => sseEvent(e.event, e.data)).join("")));
  const read = (text: string, end = false): DialectEvent[] => {
    const out: DialectEvent[] = [];
    const events = sse.push(text);
    if (end) events.push(...sse.end());
    for (const event of events) {
      if (over) break;
      if (event.data === "[DONE]") {
        answered = true;
        continue;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(event.data);
      } catch {
        continue; // not a chunk (a comment-like line some servers send): nothing to translate
      }
      if (!isRecord(chunk)) continue;
      if (isRecord(chunk.error)) {
        over = true;
        out.push(...translator.fail(typeof chunk.error.message === "string" ? chunk.error.message : "The upstream reported an error mid-stream"));
        break;
      }
      const c = chunk as ChatChunk;
      if (c.choices?.some((choice) => typeof choice?.finish_reason === "string")) answered = true;
      out.push(...translator.push(c));
    }
    return out;
  };
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      if (!started) {
        started = true;
        controller.enqueue(write(translator.start())!);
        return;
      }
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch {
          if (!over) controller.enqueue(write(translator.fail("The upstream's stream broke off before the answer was complete")) ?? new Uint8Array());
          controller.close();
          return;
        }
        if (next.done) {
          const last = read(decoder.decode(), true);
          if (!over) last.push(...(answered ? translator.finish() : translator.fail("The upstream's stream ended before the answer was complete")));
          const bytes = write(last);
          if (bytes) controller.enqueue(bytes);
          controller.close();
          return;
        }
        const bytes = write(read(decoder.decode(next.value, { stream: true })));
        if (over) {
          if (bytes) controller.enqueue(bytes);
          await reader.cancel().catch(() => {});
          controller.close();
          return;
        }
        if (bytes) return controller.enqueue(bytes);
      }
    },
    cancel: (reason) => reader.cancel(reason).catch(() => {}),
  });
}
