import { badRequest, openAIError } from "./openai-error";

// Reused: a fatal decoder keeps no state between non-streaming decode() calls.
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export type JsonBody = { ok: true; bytes: Uint8Array; json: Record<string, unknown> } | { ok: false; response: Response };

const tooLarge = (limit: number): Response =>
  openAIError(413, {
    message: `Request body exceeds the configured limit of ${limit} bytes`,
    type: "invalid_request_error",
    code: "request_too_large",
  });

/**
 * Reads a JSON object body, refusing it as soon as it passes `limit` bytes: a declared
 * Content-Length is checked before reading, and a chunked body is counted as it streams
 * so an oversized one is never held in memory whole.
 */
export async function readJsonBody(request: Request, limit: number): Promise<JsonBody> {
  if (!request.body && !request.headers.has("content-length")) {
    return { ok: false, response: badRequest("Request body is required and must be a JSON object", "invalid_json") };
  }
  const bytes = await readBounded(request, limit);
  if (!bytes) return { ok: false, response: tooLarge(limit) };
  if (bytes.byteLength === 0) return { ok: false, response: badRequest("Request body is required and must be a JSON object", "invalid_json") };

  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { ok: false, response: badRequest("Request body is not valid UTF-8", "invalid_json") };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, response: badRequest(`Request body is not valid JSON: ${(error as Error).message}`, "invalid_json") };
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    return { ok: false, response: badRequest("Request body must be a JSON object", "invalid_json") };
  }
  return { ok: true, bytes, json: json as Record<string, unknown> };
}

/**
 * The raw body, or null as soon as it passes `limit` bytes. HTTP framing holds a body to
 * its declared length, so a declared length within the limit is read natively; only a
 * body of unknown length is counted chunk by chunk, never held whole when oversized.
 */
export async function readBounded(request: Request, limit: number): Promise<Uint8Array | null> {
  const declared = Number(request.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > limit) return null;
  if (!request.body) return new Uint8Array();
  if (Number.isFinite(declared)) return new Uint8Array(await request.arrayBuffer());
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
