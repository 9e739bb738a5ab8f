import type { ErrorStyle } from "./error-style";

/**
 * Anthropic's error object, `{"type": "error", "error": {"type", "message"}}`, with the
 * types and statuses its API uses. The router's 503s (no replica could answer, the
 * upstreams are overloaded, no config serves) are Anthropic's 529 `overloaded_error`,
 * which its clients retry; every other status stays as the router chose it.
 */
export const ANTHROPIC_OVERLOADED = 529;

export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
    case 405:
    case 422:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    case 503:
    case ANTHROPIC_OVERLOADED:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

export const ANTHROPIC_ERRORS: ErrorStyle = {
  reply: (status, message, _code, headers = {}) => {
    const shown = status === 503 ? ANTHROPIC_OVERLOADED : status;
    const h = new Headers(headers);
    h.set("content-type", "application/json");
    return new Response(JSON.stringify({ type: "error", error: { type: anthropicErrorType(shown), message } }), { status: shown, headers: h });
  },
};
