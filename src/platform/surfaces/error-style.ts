import { kserveError } from "./kserve-error";
import type { OpenAIErrorType } from "./openai-error";
import { openAIError } from "./openai-error";

/**
 * How a surface tells the client something went wrong: the same facts (status, message,
 * a machine-readable code, headers such as WWW-Authenticate or Allow), each surface's own
 * shape. Every surface answers every error through one of these.
 */
export interface ErrorStyle {
  reply(status: number, message: string, code: string, headers?: Record<string, string>, param?: string): Response;
}

function openAIType(status: number, code: string, headers: Record<string, string>): OpenAIErrorType {
  if (status === 401) return "authentication_error";
  // OpenAI's own rate-limit types: which limit refused (`requests` also for concurrency), or a spent quota.
  if (code === "insufficient_quota") return "insufficient_quota";
  if (code === "rate_limit_exceeded") return headers["x-switchyard-limit"]?.endsWith(" tokens") ? "tokens" : "requests";
  if (status === 404 && code !== "model_not_found") return "not_found_error";
  if (status === 503) return "service_unavailable";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** OpenAI's error object: {"error": {"message", "type", "param", "code"}}. */
export const OPENAI_ERRORS: ErrorStyle = {
  reply: (status, message, code, headers = {}, param) => openAIError(status, { message, type: openAIType(status, code, headers), code, param: param ?? null, headers }),
};

/** KServe's v1/v2 inference protocols answer errors as {"error": "<message>"}. */
export const KSERVE_PROTOCOL_ERRORS: ErrorStyle = {
  reply: (status, message, _code, headers = {}) =>
    new Response(JSON.stringify({ error: message }), { status, headers: { ...headers, "content-type": "application/json" } }),
};

/** KServe's graph router: {"error": "Failed to process request", "cause": "<message>"}. */
export const KSERVE_GRAPH_ERRORS: ErrorStyle = {
  reply: (status, message, _code, headers = {}) => kserveError(status, message, headers),
};

/** Seldon's status object, the shape its feedback endpoint answers in (successes too). */
export function seldonStatus(code: number, info: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Response {
  const failed = code >= 400;
  const status = { code, info, reason: failed ? "BAD_DATA" : "", status: failed ? "FAILURE" : "SUCCESS" };
  return new Response(JSON.stringify({ status, ...extra }), { status: code, headers: { ...headers, "content-type": "application/json" } });
}

export const SELDON_ERRORS: ErrorStyle = {
  reply: (status, message, _code, headers = {}) => seldonStatus(status, message, {}, headers),
};
