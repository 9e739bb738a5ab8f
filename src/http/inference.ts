import type { ConfigSource } from "../kv/config-source";
import type { RandomSource } from "../routing/random";
import { failureReply } from "../upstream/attempts";
import { proxyWithFallback } from "../upstream/proxy";
import { readJsonBody } from "./body";
import { requireClientKey } from "./client-auth";
import { badRequest, openAIError } from "./openai-error";
import { noConfig } from "./no-config";
import type { Env } from "../env";
import { openSession } from "../state/session";
import { bearerToken, secretEquals } from "./auth";

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
  env: Env,
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

  const forced = await adminPin(request, env.ADMIN_TOKEN);
  if (forced !== null && !route.replicas.some((r) => r.id === forced)) {
    return badRequest(`X-Route-Pin names replica '${forced}', which is not in pool '${route.pool}'`, "unknown_replica", "x-route-pin");
  }

  const session = await openSession({ env, ctx, random: deps.random, snapshot, route, request, bearer: bearerToken(request), forced });
  if (session.candidates.length === 0) {
    const allZero = route.candidates.length === 0;
    return openAIError(503, {
      message: allZero
        ? `No replica of pool '${route.pool}' can take traffic for model '${model}' (every weight is 0)`
        : `No replica of pool '${route.pool}' can take traffic for model '${model}' (every circuit is open)`,
      type: "service_unavailable",
      code: allZero ? "no_available_replica" : "no_healthy_replica",
    });
  }

  const upstreamBody = route.upstreamModel ? JSON.stringify({ ...body.json, model: route.upstreamModel }) : body.text;
  const result = await proxyWithFallback({
    apiPath,
    body: upstreamBody,
    clientHeaders: request.headers,
    candidates: session.candidates,
    routing,
    clientSignal: request.signal,
    startedAt,
    waitUntil: (promise) => ctx.waitUntil(promise),
    onAttemptStart: (replica, index) => session.onAttemptStart(replica, index),
    onBodyEnd: (attempts, end) => {
      const last = attempts[attempts.length - 1];
      session.settle(attempts, end, last?.outcome.kind === "answered" ? last.outcome.status : 200);
    },
  });
  if (result.delivered) return result.response;

  const reply = failureReply(model, result.attempts, result.deadlineHit);
  session.settle(result.attempts, null, reply.status);
  console.warn(JSON.stringify({ event: "upstream_exhausted", model, status: reply.status, attempts: result.attempts }));
  return openAIError(reply.status, {
    message: reply.message,
    type: reply.status === 503 ? "service_unavailable" : "server_error",
    code: reply.code,
    headers: { "x-switchyard-attempts": String(result.attempts.length) },
  });
}

/**
 * `X-Route-Pin: <replica>` is an operator's override and counts only with the admin
 * token in `X-Switchyard-Admin-Token`; without it the header is ignored (and, like every
 * router header, never forwarded).
 */
async function adminPin(request: Request, adminToken: string | undefined): Promise<string | null> {
  const pin = request.headers.get("x-route-pin");
  const token = request.headers.get("x-switchyard-admin-token");
  if (!pin || !token || !adminToken) return null;
  return (await secretEquals(token, adminToken)) ? pin.trim() : null;
}
