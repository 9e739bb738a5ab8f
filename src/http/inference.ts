import type { Env } from "../env";
import { runGraph } from "../graph/executor";
import { graphIO } from "../graph/io";
import { stepHeaders } from "../graph/propagate";
import { graphResponse, routeHeaders } from "../graph/response";
import type { ConfigSnapshot, ConfigSource } from "../kv/config-source";
import type { RandomSource } from "../routing/random";
import type { IsolateState } from "../state/isolate-state";
import { openSession } from "../state/session";
import { failureReply } from "../upstream/attempts";
import { proxyWithFallback } from "../upstream/proxy";
import { bearerToken, secretEquals } from "./auth";
import { readBounded, readJsonBody } from "./body";
import { clientKeyProblem, requireClientKey } from "./client-auth";
import type { ErrorStyle } from "./error-style";
import { KSERVE_PROTOCOL_ERRORS, OPENAI_ERRORS } from "./error-style";
import { badRequest } from "./openai-error";
import { noConfig } from "./no-config";

export interface InferenceDeps {
  configSource: ConfigSource;
  random: RandomSource;
  state: IsolateState;
}

interface Call {
  request: Request;
  env: Env;
  ctx: ExecutionContext;
  deps: InferenceDeps;
  snapshot: ConfigSnapshot;
  apiPath: string;
  model: string;
  /** The body to send on, as received (or with the model renamed for the upstream). */
  body: Uint8Array;
  /** Rewrites the body for a pool whose upstream knows the model by another name. */
  renameModel: ((upstreamModel: string) => Uint8Array) | null;
  errors: ErrorStyle;
  startedAt: number;
}

/** OpenAI surface: the model comes from the JSON body (body-based routing). */
export async function handleInference(request: Request, env: Env, ctx: ExecutionContext, apiPath: string, deps: InferenceDeps): Promise<Response> {
  const startedAt = Date.now();
  const state = deps.configSource.fresh(env) ?? (await deps.configSource.get(env));
  const snapshot = state.current;
  if (!snapshot) return noConfig(state);
  if (snapshot.clientKeyDigests.length > 0) {
    const denied = await requireClientKey(request, snapshot);
    if (denied) return denied;
  }

  const body = await readJsonBody(request, snapshot.config.routing.max_body_bytes);
  if (!body.ok) return body.response;
  const model = body.json.model;
  if (model === undefined || model === null) return badRequest("Missing required parameter: 'model'", "missing_model", "model");
  if (typeof model !== "string" || model === "") return badRequest("'model' must be a non-empty string", "invalid_model", "model");

  const renameModel = (upstreamModel: string) => new TextEncoder().encode(JSON.stringify({ ...body.json, model: upstreamModel }));
  return routeModel({ request, env, ctx, deps, snapshot, apiPath, model, body: body.bytes, renameModel, errors: OPENAI_ERRORS, startedAt });
}

/** KServe's v1/v2 inference protocols: the model comes from the path; the body is passed on untouched. */
export async function handleProtocolInference(request: Request, env: Env, ctx: ExecutionContext, apiPath: string, model: string, deps: InferenceDeps): Promise<Response> {
  const startedAt = Date.now();
  const errors = KSERVE_PROTOCOL_ERRORS;
  const state = await deps.configSource.get(env);
  const snapshot = state.current;
  if (!snapshot) return errors.reply(503, "router has no valid config", "no_config");
  const problem = await clientKeyProblem(request, snapshot);
  if (problem) return errors.reply(401, problem, "invalid_api_key", { "www-authenticate": 'Bearer realm="switchyard"' });
  const limit = snapshot.config.routing.max_body_bytes;
  const body = await readBounded(request, limit);
  if (!body) return errors.reply(413, `request body exceeds the configured limit of ${limit} bytes`, "request_too_large");
  return routeModel({ request, env, ctx, deps, snapshot, apiPath, model, body, renameModel: null, errors, startedAt });
}

/** A model names a pool (replica choice + proxy) or a graph (the graph executor). */
async function routeModel(call: Call): Promise<Response> {
  const graphName = call.snapshot.graphModels.get(call.model);
  if (graphName !== undefined) return runModelGraph(call, graphName);
  const route = call.snapshot.routes.get(call.model);
  if (!route) return call.errors.reply(404, `The model '${call.model}' does not exist or you do not have access to it`, "model_not_found", {}, "model");

  const { request, env, ctx, snapshot } = call;
  const forced = request.headers.has("x-route-pin") ? await adminPin(request, env.ADMIN_TOKEN) : null;
  if (forced !== null && !route.replicas.some((r) => r.id === forced)) {
    return call.errors.reply(400, `X-Route-Pin names replica '${forced}', which is not in pool '${route.pool}'`, "unknown_replica", {}, "x-route-pin");
  }
  const opened = openSession({ env, ctx, random: call.deps.random, state: call.deps.state, snapshot, route, request, bearer: bearerToken(request), forced });
  const session = opened instanceof Promise ? await opened : opened; // stateless: no await at all
  if (session.candidates.length === 0) {
    const allZero = route.candidates.length === 0;
    return call.errors.reply(
      503,
      `No replica of pool '${route.pool}' can take traffic for model '${call.model}' (${allZero ? "every weight is 0" : "every circuit is open"})`,
      allZero ? "no_available_replica" : "no_healthy_replica",
    );
  }

  const body = route.upstreamModel && call.renameModel ? call.renameModel(route.upstreamModel) : call.body;
  const result = await proxyWithFallback({
    apiPath: call.apiPath,
    body,
    clientHeaders: request.headers,
    candidates: session.candidates,
    routing: snapshot.config.routing,
    clientSignal: request.signal,
    startedAt: call.startedAt,
    waitUntil: (promise) => ctx.waitUntil(promise),
    onAttemptStart: (replica, index) => session.onAttemptStart(replica, index),
    onBodyEnd: (attempts, end) => {
      const last = attempts[attempts.length - 1];
      session.settle(attempts, end, last?.outcome.kind === "answered" ? last.outcome.status : 200);
    },
  });
  if (result.delivered) return result.response;

  const reply = failureReply(call.model, result.attempts, result.deadlineHit);
  session.settle(result.attempts, null, reply.status);
  console.warn(JSON.stringify({ event: "upstream_exhausted", model: call.model, status: reply.status, attempts: result.attempts }));
  return call.errors.reply(reply.status, reply.message, reply.code, { "x-switchyard-attempts": String(result.attempts.length) });
}

/**
 * A model whose target is a graph: the request body is the graph's input. Success is
 * the graph's answer as is (streamed when the graph ends in one upstream call); a
 * failure is told in the calling surface's error shape.
 */
async function runModelGraph(call: Call, graphName: string): Promise<Response> {
  const graph = call.snapshot.graphs.get(graphName);
  if (!graph) return call.errors.reply(500, `model '${call.model}' targets graph '${graphName}', which is not loaded`, "graph_missing");
  const { env, ctx, request } = call;
  const io = graphIO({ env, headers: stepHeaders(request.headers, call.snapshot.headerPatterns, call.snapshot.clientKeyDigests.length > 0), random: call.deps.random, waitUntil: (p) => ctx.waitUntil(p) });
  const run = await runGraph(graph, call.body, io, request.signal);
  if (run.result.ok) return graphResponse(run, graphName);
  return call.errors.reply(run.result.status, `graph '${graphName}': ${run.result.cause}`, "graph_error", Object.fromEntries(routeHeaders(run)));
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
