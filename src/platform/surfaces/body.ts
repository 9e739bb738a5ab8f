import { readUpTo } from "../../lib/bounded-read";
import { MAX_JSON_DEPTH, nestingExceeds } from "../../lib/json";

// Reused: a fatal decoder keeps no state between non-streaming decode() calls.
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Why a body cannot be used, in surface-neutral terms; each surface words it in its own shape. */
export interface BodyProblem {
  status: 400 | 413;
  code: "request_too_large" | "unreadable_body" | "invalid_json";
  message: string;
}

export type BodyBytes = { ok: true; bytes: Uint8Array } | { ok: false; problem: BodyProblem };
export type JsonObjectBody = { ok: true; json: Record<string, unknown> } | { ok: false; problem: BodyProblem };

const invalidJson = (message: string): { ok: false; problem: BodyProblem } => ({ ok: false, problem: { status: 400, code: "invalid_json", message } });

/**
 * The raw body, refused as soon as it passes `limit` bytes. A declared length over the
 * limit is refused before anything is read; otherwise every body is counted chunk by
 * chunk as it arrives, whatever `Content-Length` says (a request built in-process, or
 * passed on by another Worker, need not hold to its header), and never held whole when
 * oversized. A body that breaks off (a client that sent less than it declared and
 * closed, broken chunking, a stream that errors) is the client's fault: 400, not a
 * router error.
 */
export async function readBounded(request: Request, limit: number, tooLargeMessage = `Request body exceeds the configured limit of ${limit} bytes`): Promise<BodyBytes> {
  try {
    const bytes = await readUpTo(request.body, request.headers.get("content-length"), limit);
    if (bytes === null) return { ok: false, problem: { status: 413, code: "request_too_large", message: tooLargeMessage } };
    return { ok: true, bytes };
  } catch (error) {
    return { ok: false, problem: { status: 400, code: "unreadable_body", message: `Request body could not be read: ${(error as Error)?.message ?? "the connection broke off"}` } };
  }
}

/** A JSON object body: UTF-8, JSON, an object, nested at most MAX_JSON_DEPTH deep. */
export function parseJsonObject(bytes: Uint8Array): JsonObjectBody {
  if (bytes.byteLength === 0) return invalidJson("Request body is required and must be a JSON object");
  if (nestingExceeds(bytes)) return invalidJson(`Request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return invalidJson("Request body is not valid UTF-8");
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return invalidJson(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) return invalidJson("Request body must be a JSON object");
  return { ok: true, json: json as Record<string, unknown> };
}
