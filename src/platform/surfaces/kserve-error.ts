
export const KSERVE_ERROR = "Failed to process request"; // KServe's InferenceGraphRoutingError.error

/** KServe's error body: {"error":"Failed to process request","cause":"..."}. */
export function kserveError(status: number, cause: string, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  return new Response(JSON.stringify({ error: KSERVE_ERROR, cause }), { status, headers: h });
}
