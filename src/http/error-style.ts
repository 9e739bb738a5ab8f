import type { OpenAIErrorType } from "./openai-error";
import { openAIError } from "./openai-error";

/** How a surface tells the client something went wrong. Same facts, each surface's own shape. */
export interface ErrorStyle {
  reply(status: number, message: string, code: string, headers?: Record<string, string>, param?: string): Response;
}

function openAIType(status: number, code: string): OpenAIErrorType {
  if (status === 401) return "authentication_error";
  if (status === 404 && code !== "model_not_found") return "not_found_error";
  if (status === 503) return "service_unavailable";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** OpenAI's error object. */
export const OPENAI_ERRORS: ErrorStyle = {
  reply: (status, message, code, headers = {}, param) => openAIError(status, { message, type: openAIType(status, code), code, param: param ?? null, headers }),
};

/** KServe's v1/v2 inference protocols answer errors as {"error": "<message>"}. */
export const KSERVE_PROTOCOL_ERRORS: ErrorStyle = {
  reply: (status, message, _code, headers = {}) =>
    new Response(JSON.stringify({ error: message }), { status, headers: { ...headers, "content-type": "application/json" } }),
};
