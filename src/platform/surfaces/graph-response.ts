import type { GraphRun } from "../../core/graph/executor";
import { isJsonObject, parseJson } from "../../lib/json";

export const KSERVE_ERROR = "Failed to process request"; // KServe's InferenceGraphRoutingError.error

/** KServe's error body: {"error":"Failed to process request","cause":"..."}. */
export function kserveError(status: number, cause: string, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  return new Response(JSON.stringify({ error: KSERVE_ERROR, cause }), { status, headers: h });
}

export function routeHeaders(run: GraphRun): Headers {
  const headers = new Headers();
  if (run.trace.length > 0) headers.set("x-switchyard-route", run.trace.join(","));
  if (Object.keys(run.routing).length > 0) headers.set("x-switchyard-routing", JSON.stringify(run.routing));
  return headers;
}

/**
 * A graph's answer to the client, as KServe writes it: the final step's status and
 * bytes; `Content-Type: application/json` when the bytes are JSON, else the upstream's
 * own type (KServe leaves it to sniffing). Router choices go into `meta.routing` of a
 * JSON object answer (Seldon's executor drops them) and always into a header.
 */
export function graphResponse(run: GraphRun, graph: string): Response {
  const result = run.result;
  const headers = routeHeaders(run);
  if (!result.ok) return kserveError(result.status, result.cause, headers);
  if (result.stream) {
    if (result.contentType) headers.set("content-type", result.contentType);
    return new Response(result.stream, { status: result.status, headers });
  }
  let body: BodyInit = result.body;
  const parsed = parseJson(result.body);
  if (parsed.ok) {
    headers.set("content-type", "application/json");
    if (Object.keys(run.routing).length > 0 && isJsonObject(parsed.value)) body = JSON.stringify(withRouting(parsed.value, run.routing, graph));
  } else if (result.contentType) {
    headers.set("content-type", result.contentType);
  }
  return new Response(body, { status: result.status, headers });
}

function withRouting(answer: Record<string, unknown>, routing: Record<string, number>, graph: string): Record<string, unknown> {
  const meta = isJsonObject(answer.meta) ? answer.meta : {};
  const previous = isJsonObject(meta.routing) ? meta.routing : {};
  return { ...answer, meta: { ...meta, routing: { ...previous, ...routing }, graph } };
}
