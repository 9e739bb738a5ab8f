/**
 * OpenAI's error object: `{"error": {"message", "type", "param", "code"}}`. Every error the
 * OpenAI surface returns has this shape so SDKs surface a readable message.
 */
export type OpenAIErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "server_error"
  | "service_unavailable";

export interface OpenAIErrorInit {
  message: string;
  type: OpenAIErrorType;
  code: string;
  param?: string | null;
  headers?: HeadersInit;
}

export function openAIError(status: number, init: OpenAIErrorInit): Response {
  const headers = new Headers(init.headers);
  headers.set("content-type", "application/json");
  const body = { error: { message: init.message, type: init.type, param: init.param ?? null, code: init.code } };
  return new Response(JSON.stringify(body), { status, headers });
}

export const badRequest = (message: string, code: string, param: string | null = null): Response =>
  openAIError(400, { message, type: "invalid_request_error", code, param });

export const notFound = (message: string, code = "not_found"): Response =>
  openAIError(404, { message, type: "not_found_error", code });

export const methodNotAllowed = (allow: string[]): Response =>
  openAIError(405, {
    message: `Method not allowed; this path accepts ${allow.join(", ")}`,
    type: "invalid_request_error",
    code: "method_not_allowed",
    headers: { allow: allow.join(", ") },
  });

export const unauthorized = (message: string): Response =>
  openAIError(401, { message, type: "authentication_error", code: "invalid_api_key", headers: { "www-authenticate": 'Bearer realm="switchyard"' } });
