/**
 * The words of an upstream's error answer, for a client that gets them in its own error
 * shape (a translated dialect, a graph called through a model).
 */
import { isJsonObject as isRecord } from "../../lib/json";

const MAX_ERROR_MESSAGE_CHARS = 2_000; // an error's words, not a document: FastAPI's detail list can be long

/**
 * What an upstream's error body says, in the shapes servers give it: OpenAI's
 * `{error: {message, code, param}}`, vLLM's and SGLang's older `{message}`, KServe's
 * `{error: "..."}` and FastAPI's `{detail: "..." | [{loc, msg}]}`.
 */
export function upstreamError(parsed: unknown, status: number): { message: string; code?: string; param?: string } {
  const body = isRecord(parsed) ? parsed : {};
  const error = isRecord(body.error) ? body.error : {};
  const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
  const detail = Array.isArray(body.detail)
    ? body.detail.map((d) => (isRecord(d) && typeof d.msg === "string" ? (Array.isArray(d.loc) ? `${d.loc.join(".")}: ${d.msg}` : d.msg) : null)).filter((d) => d !== null).join("; ")
    : body.detail;
  const message = text(error.message) ?? text(body.error) ?? text(body.message) ?? text(detail) ?? `The upstream answered ${status}`;
  const code = text(error.code);
  const param = text(error.param);
  return { message: message.slice(0, MAX_ERROR_MESSAGE_CHARS), ...(code !== undefined && { code }), ...(param !== undefined && { param }) };
}

