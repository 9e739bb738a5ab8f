/**
 * OpenAI's error object: `{"error": {"message", "type", "param", "code"}}`. Every error the
 * OpenAI surface returns has this shape so SDKs surface a readable message.
 */
export type OpenAIErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "server_error"
  | "service_unavailable"
  | "requests"
  | "tokens"
  | "insufficient_quota";

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
