import { hash53 } from "../../../lib/hash53";

/**
 * The canonical text whose prefix decides which replica's KV cache a request can reuse.
 *
 * Chat (`/v1/chat/completions`): the tool definitions, then every message in order, each
 * as `RS role [US name] US content`, where RS (U+001E) and US (U+001F) are control
 * characters that do not occur in normal text. Content is the message's string, or its
 * parts in order: text parts as their text, anything else (images, audio, files) as a
 * short placeholder with a stable identity, and an assistant's tool calls as
 * `SUB tool_call name arguments`.
 *
 * Why this form, against the three reference systems:
 * - It is what an engine's chat template turns into tokens, in the same order: roles and
 *   tool definitions are part of the KV, so `system: X` and `user: X` must differ. Ray
 *   concatenates contents without roles and would call them equal.
 * - Rendering message k never depends on later messages, so turn n's text is a prefix of
 *   turn n+1's: a multi-turn conversation keeps its cache hits. (JSON.stringify of the
 *   array has the same property only up to the closing bracket.)
 * - It is independent of the client's JSON: key order, whitespace and extra fields
 *   (`tool_call_id`, unknown vendor keys) do not change it. GAIE's json.Marshal(messages)
 *   depends on those, and a base64 image would fill its whole 16 KiB window with image
 *   bytes; here an image is a ~40-character placeholder.
 * - Every message counts. SGLang's PD router hashed only the first message (the shared
 *   system prompt), so every request looked like the same prefix (sglang #26263).
 *
 * Completions (`/v1/completions`) and embeddings (`/v1/embeddings`): `prompt` / `input`
 * as a string; token ids as `id,id,...,` (a prefix of ids gives a prefix of text). A batch
 * (an array of prompts) uses its first prompt: the engine caches each prompt as its own
 * sequence, so a chain across prompts would describe a sequence no replica holds.
 *
 * Any other path or shape gives "" (no prefix routing). `maxChars` stops rendering once
 * that much text exists: hashing reads at most blockChars × maxBlocks characters, and a
 * placeholder past that point need not be computed.
 */
export function promptText(apiPath: string, body: unknown, maxChars = Number.POSITIVE_INFINITY): string {
  if (!isRecord(body)) return "";
  const out = new TextBuilder(maxChars);
  if (apiPath.endsWith("/chat/completions")) renderChat(body, out);
  else if (apiPath.endsWith("/completions")) renderPrompt(body.prompt, out);
  else if (apiPath.endsWith("/embeddings")) renderPrompt(body.input, out);
  return out.text();
}

const RECORD = "\u001e"; // starts each message
const UNIT = "\u001f"; // separates a message's role, name and content
const SUBSTITUTE = "\u001a"; // starts a placeholder for a non-text part
/** Characters of a long media payload that enter its identity: its length plus hashes of the first and last this many. */
const MEDIA_SAMPLE_CHARS = 2_048;
/** A payload at most this long is used verbatim as its identity (an http(s) URL). */
const MEDIA_VERBATIM_CHARS = 512;

class TextBuilder {
  private parts: string[] = [];
  private length = 0;
  constructor(private readonly maxChars: number) {}
  get full(): boolean {
    return this.length >= this.maxChars;
  }
  push(s: string): void {
    if (this.full) return;
    this.parts.push(s);
    this.length += s.length;
  }
  text(): string {
    const joined = this.parts.join("");
    return joined.length > this.maxChars ? joined.slice(0, this.maxChars) : joined;
  }
}

function renderChat(body: Record<string, unknown>, out: TextBuilder): void {
  // Templates put tool definitions in the system turn, ahead of the conversation. The
  // client's own JSON is kept: one client sends its tools the same way every time.
  if (Array.isArray(body.tools) && body.tools.length > 0) out.push(`${SUBSTITUTE}tools${UNIT}${JSON.stringify(body.tools)}`);
  if (!Array.isArray(body.messages)) return;
  for (const message of body.messages) {
    if (out.full) return;
    if (!isRecord(message)) continue;
    out.push(RECORD + stringOr(message.role, "?"));
    if (typeof message.name === "string") out.push(UNIT + message.name);
    out.push(UNIT);
    renderContent(message.content, out);
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        const fn = isRecord(call) && isRecord(call.function) ? call.function : {};
        out.push(`${SUBSTITUTE}tool_call ${stringOr(fn.name, "")} ${stringOr(fn.arguments, "")}`);
      }
    }
  }
}

function renderContent(content: unknown, out: TextBuilder): void {
  if (typeof content === "string") return out.push(content);
  if (!Array.isArray(content)) return;
  for (const part of content) {
    if (out.full) return;
    if (!isRecord(part)) continue;
    switch (part.type) {
      case "text":
        out.push(stringOr(part.text, ""));
        break;
      case "refusal":
        out.push(stringOr(part.refusal, ""));
        break;
      case "image_url":
        out.push(placeholder("image", isRecord(part.image_url) ? stringOr(part.image_url.url, "") : ""));
        break;
      case "input_audio":
        out.push(placeholder("audio", isRecord(part.input_audio) ? stringOr(part.input_audio.data, "") : ""));
        break;
      case "file": {
        const file = isRecord(part.file) ? part.file : {};
        out.push(placeholder("file", stringOr(file.file_id, "") || stringOr(file.file_data, "")));
        break;
      }
      default:
        out.push(placeholder(stringOr(part.type, "part"), ""));
    }
  }
}

/**
 * `SUB[kind identity]`. A short payload (an http(s) URL, a file id) is its own identity:
 * the same URL is the same image to the engine. A long one (a base64 data URI) is known by
 * its length and hashes of its first and last 2 KiB, so a multi-megabyte image costs
 * microseconds, not a full pass; two different images that agree on length and both
 * samples would share a prefix credit, a routing preference and nothing more.
 */
function placeholder(kind: string, payload: string): string {
  if (payload.length <= MEDIA_VERBATIM_CHARS) return `${SUBSTITUTE}[${kind} ${payload}]`;
  const head = hash53(payload, 0, MEDIA_SAMPLE_CHARS);
  const tail = hash53(payload, payload.length - MEDIA_SAMPLE_CHARS, payload.length);
  return `${SUBSTITUTE}[${kind} ${payload.length}:${head.toString(36)}:${tail.toString(36)}]`;
}

function renderPrompt(prompt: unknown, out: TextBuilder): void {
  if (typeof prompt === "string") return out.push(prompt);
  if (!Array.isArray(prompt) || prompt.length === 0) return;
  const first = prompt[0];
  if (typeof first === "number") return renderTokens(prompt, out); // one prompt as token ids
  if (typeof first === "string") return out.push(first); // a batch of prompts: the first
  if (Array.isArray(first)) return renderTokens(first, out); // a batch of token-id prompts: the first
}

function renderTokens(ids: readonly unknown[], out: TextBuilder): void {
  for (const id of ids) {
    if (out.full) return;
    if (typeof id === "number") out.push(`${id},`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}
