/**
 * Reads what an answer cost as it passes to the client: the OpenAI `usage` object of a
 * JSON body, or of an event stream's usage chunk (sent when the request asked for
 * `stream_options.include_usage`, as RouteWise always does; a client that did not ask
 * gets its stream without it). Without one, output tokens are estimated: one per
 * content chunk of a stream, or a quarter of the content characters of a JSON answer.
 * A stream's every chunk passes through JavaScript; a small fixed-length JSON answer is
 * read whole by the engine instead ({@link usageOfJsonBody}).
 */
import { isTokenCount } from "../../core/routewise/bounds";
import { estimateTokens } from "../../core/routewise/tokens";
import { answeringModel } from "../../lib/answer-model";

export interface MeteredUsage {
  promptTokens: number | null;
  outputTokens: number;
  cachedTokens: number;
  /** False when no usable usage object was seen and output tokens are an estimate. */
  reported: boolean;
  /** True when a usage object was seen but a count in it was out of range (then it is estimated, as if absent). */
  discarded?: boolean;
  /** The model the answer names beside its usage (a trace's `gen_ai.response.model`), when it does. */
  model?: string;
}

const JSON_KEEP_BYTES = 1024 * 1024; // a non-streamed completion past this is not parsed for usage (then estimated)

/** How a metered body ended: fully, broken off by the upstream (or an abort), or cancelled by its reader. */
/** An event stream's body (SSE): its first chunk is a first token, its usage comes in a chunk of its own. */
export const isEventStream = (headers: Headers): boolean => (headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");

export type MeterEnd = { usage: MeteredUsage; end: "complete" | "broken" | "cancelled" };

/**
 * An answer's body on its way to the client, metered. `first()` reads ahead to the first
 * chunk (a hedge race is won by the first byte); `stream()` is the body as the client
 * gets it, that chunk included. `onEnd` hears the usage once, however the body ends.
 */
export class MeteredBody {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  readonly #counter: SseUsage | JsonUsage;
  #head: ReadableStreamReadResult<Uint8Array> | null = null;
  #ended = false;

  readonly #filter: UsageChunkFilter | null;

  /** `hideUsageChunk`: an event stream reaches its reader without the usage the router asked for (the client did not). */
  constructor(
    body: ReadableStream<Uint8Array>,
    eventStream: boolean,
    private readonly onEnd: (result: MeterEnd) => void,
    hideUsageChunk = false,
  ) {
    this.#reader = body.getReader();
    this.#counter = eventStream ? new SseUsage() : new JsonUsage();
    this.#filter = eventStream && hideUsageChunk ? new UsageChunkFilter() : null;
  }

  /** Resolves when the first chunk (or the end) is here; false if the body failed first. */
  async first(): Promise<boolean> {
    try {
      this.#head ??= await this.#read();
      return true;
    } catch {
      return false;
    }
  }

  /** Gives up on the body (its reader went away, or a hedge lost); its usage is what was seen. */
  cancel(reason?: unknown): void {
    this.#finish("cancelled");
    this.#reader.cancel(reason).catch(() => {});
  }

  /** What the body has said it cost so far. */
  usage(): MeteredUsage {
    return this.#counter.result();
  }

  stream(): ReadableStream<Uint8Array> {
    const filter = this.#filter;
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        try {
          for (;;) {
            const next = this.#head ?? (await this.#read());
            this.#head = null;
            if (next.done) {
              const rest = filter?.end();
              if (rest) controller.enqueue(rest);
              this.#finish("complete");
              controller.close();
              return;
            }
            const out = filter ? filter.push(next.value) : next.value;
            // A chunk that was all usage (or only part of an event) gives nothing yet: read on.
            if (out) return controller.enqueue(out);
          }
        } catch (error) {
          this.#finish("broken");
          controller.error(error);
        }
      },
      cancel: (reason) => this.cancel(reason),
    });
  }

  async #read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    const next = await this.#reader.read();
    if (!next.done) this.#counter.push(this.#decoder.decode(next.value, { stream: true }));
    return next;
  }

  #finish(end: MeterEnd["end"]): void {
    if (this.#ended) return;
    this.#ended = true;
    this.onEnd({ usage: this.#counter.result(), end });
  }
}

const wholeDecoder = new TextDecoder(); // stateless when not streaming: one per isolate

/**
 * The usage of a JSON answer read whole. Its `usage` object alone is parsed when it is
 * found as the body's last `"usage":` key (an embeddings answer is mostly numbers no one
 * needs parsed); anything else — none found, an escaped or odd match, no output count —
 * parses the whole body, as a streamed read would.
 */
export function usageOfJsonBody(bytes: ArrayBuffer): MeteredUsage {
  const text = wholeDecoder.decode(bytes);
  const slice = usageSlice(text);
  if (slice !== null) {
    try {
      const usage = usageOf({ usage: JSON.parse(slice), model: answeringModel(text) ?? undefined });
      if (usage !== null && usage !== DISCARDED) return usage;
    } catch {
      // not what it looked like: the whole body below
    }
  }
  const counter = new JsonUsage();
  counter.push(text);
  return counter.result();
}

const QUOTE = 34;
const BACKSLASH = 92;
const COLON = 58;
const OPEN_BRACE = 123;

/** The first index from `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return i;
    i++;
  }
}

/** The text of the object after the body's last `"usage":` key; null when there is no such object. */
function usageSlice(text: string): string | null {
  const at = text.lastIndexOf('"usage"');
  if (at < 0) return null;
  let slashes = 0;
  while (at - slashes - 1 >= 0 && text.charCodeAt(at - slashes - 1) === BACKSLASH) slashes++;
  if (slashes % 2 === 1) return null; // an escaped quote: inside some string
  // `"usage"`, then `:` and `{` with only whitespace around: scanned in place, no slice or match built.
  let start = skipSpace(text, at + 7);
  if (text.charCodeAt(start) !== COLON) return null;
  start = skipSpace(text, start + 1);
  if (text.charCodeAt(start) !== OPEN_BRACE) return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE) depth++;
    else if (c === 125 && --depth === 0) return text.slice(start, i + 1);
  }
  return null;
}


/**
 * The usage object of a parsed body; null when there is none. A count that is present
 * but not a whole number in [0, MAX_TOKENS_PER_REQUEST] (1e308, -1, 0.5, "lots") makes the whole
 * object untrustworthy: it is `DISCARDED`, and the answer is estimated as if it had none.
 * Anthropic's Messages API (an Anthropic-native replica) counts its prompt as input plus
 * cache reads and writes, and streams its usage in `message_start` (under `message`)
 * then `message_delta`.
 */
function usageOf(value: unknown): MeteredUsage | typeof DISCARDED | null {
  if (value === null || typeof value !== "object") return null;
  const u = (value as { usage?: unknown }).usage ?? (value as { message?: { usage?: unknown } }).message?.usage;
  if (u === null || typeof u !== "object") return null;
  const usage = u as Record<string, unknown>;
  const details = (typeof usage.prompt_tokens_details === "object" ? usage.prompt_tokens_details : null) as Record<string, unknown> | null;
  const counts = [usage.completion_tokens, usage.output_tokens, usage.prompt_tokens, usage.input_tokens, details?.cached_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens];
  if (counts.some((x) => x !== undefined && x !== null && !isTokenCount(x))) return DISCARDED;
  const n = (x: unknown) => (isTokenCount(x) ? x : null);
  // An embeddings answer counts its input only: `total_tokens` equal to `prompt_tokens`, no output.
  const output = n(usage.completion_tokens) ?? n(usage.output_tokens) ?? (n(usage.prompt_tokens) !== null && n(usage.total_tokens) === usage.prompt_tokens ? 0 : null);
  if (output === null) return null;
  const cacheRead = n(usage.cache_read_input_tokens);
  const input = n(usage.input_tokens);
  const anthropicPrompt = input === null ? null : input + (cacheRead ?? 0) + (n(usage.cache_creation_input_tokens) ?? 0);
  const model = (value as { model?: unknown }).model ?? (value as { message?: { model?: unknown } }).message?.model;
  return { promptTokens: n(usage.prompt_tokens) ?? anthropicPrompt, outputTokens: output, cachedTokens: n(details?.cached_tokens) ?? cacheRead ?? 0, reported: true, ...(typeof model === "string" && { model }) };
}

/**
 * Takes the usage the router asked for out of an event stream whose client did not ask:
 * an event that carries only usage (`choices: []`) is dropped, and the `usage` key of any
 * other chunk (`null` on every chunk once usage is asked for) is removed from it. Events
 * are passed on whole, as they complete; only those that mention usage are parsed.
 */
class UsageChunkFilter {
  readonly #decoder = new TextDecoder();
  readonly #encoder = new TextEncoder();
  #pending = "";

  push(bytes: Uint8Array): Uint8Array | null {
    this.#pending += this.#decoder.decode(bytes, { stream: true });
    let out = "";
    for (;;) {
      const boundary = /\r?\n\r?\n/.exec(this.#pending);
      if (!boundary) break;
      const end = boundary.index + boundary[0].length;
      out += withoutUsage(this.#pending.slice(0, boundary.index), boundary[0]);
      this.#pending = this.#pending.slice(end);
    }
    return out === "" ? null : this.#encoder.encode(out);
  }

  /** What is left when the stream ends: an unterminated last event, as it came. */
  end(): Uint8Array | null {
    const rest = this.#pending + this.#decoder.decode();
    this.#pending = "";
    return rest === "" ? null : this.#encoder.encode(rest);
  }
}

/** One event (without its blank-line terminator) as the client gets it: "" when it was only usage. */
function withoutUsage(event: string, terminator: string): string {
  if (!event.includes('"usage"')) return event + terminator;
  const lines = event.split(/\r?\n/);
  const dataAt = lines.findIndex((l) => l.startsWith("data:"));
  if (dataAt < 0 || lines.filter((l) => l.startsWith("data:")).length !== 1) return event + terminator; // multi-line data: passed on as is
  let chunk: unknown;
  try {
    chunk = JSON.parse(lines[dataAt]!.slice(5));
  } catch {
    return event + terminator;
  }
  if (typeof chunk !== "object" || chunk === null || !("usage" in chunk)) return event + terminator;
  const { usage, ...rest } = chunk as Record<string, unknown>;
  const choices = (rest as { choices?: unknown }).choices;
  if (usage !== null && Array.isArray(choices) && choices.length === 0) return "";
  lines[dataAt] = `data: ${JSON.stringify(rest)}`; // a chunk's own "usage": null (or a usage riding on it) goes too
  return lines.join("\n") + terminator;
}

const DISCARDED = "discarded";

class SseUsage {
  #partial = "";
  #chunks = 0;
  #usage: MeteredUsage | null = null;
  #discarded = false;

  push(text: string): void {
    const lines = (this.#partial + text).split("\n");
    this.#partial = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.startsWith("data:")) continue;
      const data = line.slice(5).trim();
      if (data === "" || data === "[DONE]") continue;
      // Parsing every chunk would cost more than the router's own work; only a usage chunk is parsed.
      if (data.includes('"usage"') && !data.includes('"usage":null')) {
        try {
          const seen = usageOf(JSON.parse(data));
          if (seen === DISCARDED) this.#discarded = true;
          // Anthropic's message_delta repeats no prompt count: the message_start's stands.
          else if (seen !== null && seen.promptTokens === null && this.#usage !== null) {
            const model = seen.model ?? this.#usage.model; // named in message_start only
            this.#usage = { ...seen, promptTokens: this.#usage.promptTokens, cachedTokens: this.#usage.cachedTokens, ...(model !== undefined && { model }) };
          }
          else this.#usage = seen ?? this.#usage;
        } catch {
          // not JSON: counted as content below
        }
      }
      if (data.includes('"content"') || data.includes('"text"')) this.#chunks++;
    }
  }

  result(): MeteredUsage {
    // One bad usage chunk spoils the answer's usage: a later good-looking one from the same provider is not trusted either.
    if (this.#discarded) return { promptTokens: null, outputTokens: this.#chunks, cachedTokens: 0, reported: false, discarded: true };
    return this.#usage ?? { promptTokens: null, outputTokens: this.#chunks, cachedTokens: 0, reported: false };
  }
}

class JsonUsage {
  #text = "";
  #overflow = false;

  push(text: string): void {
    if (this.#overflow) return;
    this.#text += text;
    if (this.#text.length > JSON_KEEP_BYTES) {
      this.#overflow = true;
      this.#text = "";
    }
  }

  result(): MeteredUsage {
    let parsed: unknown = null;
    if (!this.#overflow) {
      try {
        parsed = JSON.parse(this.#text);
      } catch {
        parsed = null;
      }
    }
    const usage = usageOf(parsed);
    if (usage !== null && usage !== DISCARDED) return usage;
    return { promptTokens: null, outputTokens: estimateTokens(contentChars(parsed)), cachedTokens: 0, reported: false, ...(usage === DISCARDED && { discarded: true }) };
  }
}

function contentChars(parsed: unknown): number {
  const choices = (parsed as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return 0;
  let chars = 0;
  for (const c of choices) {
    const message = (c as { message?: { content?: unknown }; text?: unknown })?.message?.content ?? (c as { text?: unknown })?.text;
    if (typeof message === "string") chars += message.length;
  }
  return chars;
}
