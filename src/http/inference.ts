import type { ConfigSource } from "../kv/config-source";
import type { RandomSource } from "../routing/random";
import { weightedOrder } from "../routing/weighted";
import { failureReply } from "../upstream/attempts";
import { proxyWithFallback } from "../upstream/proxy";
import { readJsonBody } from "./body";
import { requireClientKey } from "./client-auth";
import { badRequest, openAIError } from "./openai-error";
import { noConfig } from "./no-config";

export interface InferenceDeps {
  configSource: ConfigSource;
  random: RandomSource;
}

/**
 * One OpenAI-style inference call: the body names the model, the model names a pool,
 * the pool's weights order the replicas, and the proxy walks that order.
 */
export async function handleInference(
  request: Request,
  env: Record<string, unknown> & { CONFIG: KVNamespace },
  ctx: ExecutionContext,
  apiPath: string,
  deps: InferenceDeps,
): Promise<Response> {
  const startedAt = Date.now();
  const state = await deps.configSource.get(env);
  const snapshot = state.current;
  if (!snapshot) return noConfig(state);

  const denied = await requireClientKey(request, snapshot);
  if (denied) return denied;

  const { routing } = snapshot.config;
  const body = await readJsonBody(request, routing.max_body_bytes);
  if (!body.ok) return body.response;

  const model = body.json.model;
  if (model === undefined || model === null) return badRequest("Missing required parameter: 'model'", "missing_model", "model");
  if (typeof model !== "string" || model === "") return badRequest("'model' must be a non-empty string", "invalid_model", "model");

  const route = snapshot.routes.get(model);
  if (!route) {
    return openAIError(404, {
      message: `The model '${model}' does not exist or you do not have access to it`,
      type: "invalid_request_error",
      code: "model_not_found",
      param: "model",
    });
  }

  const candidates = weightedOrder(route.candidates, deps.random);
  if (candidates.length === 0) {
    return openAIError(503, {
      message: `No replica of pool '${route.pool}' can take traffic for model '${model}' (every weight is 0)`,
      type: "service_unavailable",
      code: "no_available_replica",
    });
  }

  const upstreamBody = route.upstreamModel ? JSON.stringify({ ...body.json, model: route.upstreamModel }) : body.text;
  const result = await proxyWithFallback({
    apiPath,
    body: upstreamBody,
    clientHeaders: request.headers,
    candidates,
    routing,
    clientSignal: request.signal,
    startedAt,
    waitUntil: (promise) => ctx.waitUntil(promise),
  });
  if (result.delivered) return result.response;

  const reply = failureReply(model, result.attempts, result.deadlineHit);
  console.warn(JSON.stringify({ event: "upstream_exhausted", model, status: reply.status, attempts: result.attempts }));
  return openAIError(reply.status, {
    message: reply.message,
    type: reply.status === 503 ? "service_unavailable" : "server_error",
    code: reply.code,
    headers: { "x-switchyard-attempts": String(result.attempts.length) },
  });
}
