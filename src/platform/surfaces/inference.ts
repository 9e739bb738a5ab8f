import type { Env } from "../env";
import { predictPath } from "../../core/graph/compile";
import { runGraph } from "../../core/graph/executor";
import { graphIO } from "../../app/model-call/graph";
import { stepHeaders } from "../../core/upstream/propagate";
import { graphResponse, routeHeaders } from "./graph-response";
import type { ConfigSnapshot, ConfigSource } from "../config-source";
import type { RandomSource } from "../../lib/random";
import type { IsolateState } from "../../app/state/isolate-state";
import { upstreamRequestHeaders } from "../../core/upstream/headers";
import { callPool } from "../../app/model-call/pool";
import type { PoolOutcome } from "../../app/model-call/pool";
import { callRouteWise } from "../../app/model-call/provider-set";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { promptText } from "../../core/picking/prefix/prompt-text";
import { bearerToken, secretEquals } from "../../lib/crypto";
import { parseJsonObject } from "./body";
import type { ErrorStyle } from "./error-style";
import { KSERVE_PROTOCOL_ERRORS, OPENAI_ERRORS } from "./error-style";
import { decodeSegment, openRequest } from "./preamble";
import { requestPriority } from "../../core/pool/admission";
import type { SloTargets } from "../../app/state/pool-agent";
import { featuresFor } from "../../app/model-call/request-features";

const MAX_SLO_MS = 600_000; // ten minutes: past any try timeout, so a larger objective means nothing

export interface InferenceDeps {
  configSource: ConfigSource;
  random: RandomSource;
  state: IsolateState;
}

/** Which endpoint a request came in on; decides the upstream path and how the body may change. */
type Surface = { kind: "openai"; apiPath: string } | { kind: "kserve"; protocol: "v1" | "v2" };

interface Call {
  request: Request;
  env: Env;
  ctx: ExecutionContext;
  deps: InferenceDeps;
  snapshot: ConfigSnapshot;
  surface: Surface;
  model: string;
  /** The body as received. */
  body: Uint8Array;
  /** The parsed body, on the OpenAI surface: renamed for a pool whose upstream knows the model by another name. */
  json: Record<string, unknown> | null;
  errors: ErrorStyle;
  startedAt: number;
}

/** OpenAI surface: the model comes from the JSON body (body-based routing). */
export async function handleInference(request: Request, env: Env, ctx: ExecutionContext, apiPath: string, deps: InferenceDeps): Promise<Response> {
  const startedAt = Date.now();
  const errors = OPENAI_ERRORS;
  const opened = await openRequest(request, env, deps.configSource, errors, { auth: "client", body: true });
  if (!opened.ok) return opened.response;
  const parsed = parseJsonObject(opened.body);
  if (!parsed.ok) return errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const model = parsed.json.model;
  if (model === undefined || model === null) return errors.reply(400, "Missing required parameter: 'model'", "missing_model", {}, "model");
  if (typeof model !== "string" || model === "") return errors.reply(400, "'model' must be a non-empty string", "invalid_model", {}, "model");
  return routeModel({ request, env, ctx, deps, snapshot: opened.snapshot, surface: { kind: "openai", apiPath }, model, body: opened.body, json: parsed.json, errors, startedAt });
}

/**
 * KServe's v1/v2 inference protocols: the model comes from the path (still percent-encoded:
 * it is decoded only after the client is authenticated); the body is passed on untouched.
 */
export async function handleProtocolInference(request: Request, env: Env, ctx: ExecutionContext, protocol: "v1" | "v2", rawModel: string, deps: InferenceDeps): Promise<Response> {
  const startedAt = Date.now();
  const errors = KSERVE_PROTOCOL_ERRORS;
  const opened = await openRequest(request, env, deps.configSource, errors, { auth: "client", body: true });
  if (!opened.ok) return opened.response;
  const model = decodeSegment(rawModel);
  if (model === null || model === "") return errors.reply(400, "the model name in the path is not valid percent-encoding", "invalid_path");
  return routeModel({ request, env, ctx, deps, snapshot: opened.snapshot, surface: { kind: "kserve", protocol }, model, body: opened.body, json: null, errors, startedAt });
}

/** A model names a pool (replica choice + proxy) or a graph (the graph executor). */
async function routeModel(call: Call): Promise<Response> {
  const graphName = call.snapshot.graphModels.get(call.model);
  if (graphName !== undefined) return runModelGraph(call, graphName);
  const routewise = call.snapshot.routewise.get(call.model);
  if (routewise) return routeWiseModel(call, routewise);
  const route = call.snapshot.routes.get(call.model);
  if (!route) return call.errors.reply(404, `The model '${call.model}' does not exist or you do not have access to it`, "model_not_found", {}, "model");

  const { request, env, ctx, snapshot } = call;
  const forced = request.headers.has("x-route-pin") ? await adminPin(request, env.ADMIN_TOKEN) : null;
  if (forced !== null && !route.replicas.some((r) => r.id === forced)) {
    return call.errors.reply(400, `X-Route-Pin names replica '${forced}', which is not in pool '${route.pool}'`, "unknown_replica", {}, "x-route-pin");
  }

  // The upstream path is the router's own: on the KServe surfaces it is built from the
  // model the pool serves, never copied from the client's path.
  const priority = requestPriority(route.priority, request.headers.get("x-switchyard-priority"));
  if (priority === null) {
    return call.errors.reply(400, "X-Switchyard-Priority must be one of sheddable, standard, critical", "invalid_priority", {}, "x-switchyard-priority");
  }
  const slo: SloTargets = {};
  for (const [header, key, name] of [["x-slo-ttft-ms", "ttftMs", "X-SLO-TTFT-Ms"], ["x-slo-tpot-ms", "tpotMs", "X-SLO-TPOT-Ms"]] as const) {
    const raw = request.headers.get(header);
    if (raw === null) continue;
    const ms = Number(raw.trim());
    if (!(raw.trim() !== "" && Number.isInteger(ms) && ms > 0 && ms <= MAX_SLO_MS)) {
      return call.errors.reply(400, `${name} must be a whole number of milliseconds from 1 to ${MAX_SLO_MS}`, "invalid_slo", {}, header);
    }
    slo[key] = ms;
  }
  const upstreamModel = route.upstreamModel ?? call.model;
  const apiPath = call.surface.kind === "openai" ? call.surface.apiPath : predictPath(call.surface.protocol, upstreamModel);
  const renamed = call.json !== null && route.upstreamModel !== undefined;
  const body = renamed ? new TextEncoder().encode(JSON.stringify({ ...call.json, model: route.upstreamModel })) : call.body;
  const headers = upstreamRequestHeaders(request.headers, call.json !== null ? { contentType: "application/json", bodyRewritten: true } : {});
  const pool = snapshot.config.pools[route.pool]!;
  // Only the shared-state path picks with a scoring policy; stateless routing reads weights alone.
  const features = snapshot.config.routing.shared_state ? featuresFor(request, route, pool.policy, pool.locality, apiPath, call.json) : undefined;
  const outcome = await callPool({
    env,
    ctx,
    random: call.deps.random,
    state: call.deps.state,
    snapshot,
    route,
    request,
    bearer: bearerToken(request),
    apiPath,
    body,
    headers,
    forced,
    affinity: true,
    startedAt: call.startedAt,
    features,
    priority,
    slo,
  });
  return outcomeResponse(call, outcome);
}

function outcomeResponse(call: Call, outcome: PoolOutcome): Response {
  if (outcome.ok) return outcome.response;
  const extra: Record<string, string> = outcome.attempts.length > 0 ? { "x-switchyard-attempts": String(outcome.attempts.length) } : {};
  if (outcome.retryAfterS !== undefined) extra["retry-after"] = String(outcome.retryAfterS);
  return call.errors.reply(outcome.status, call.snapshot.redactions.text(outcome.message), outcome.code, extra);
}

/**
 * A RouteWise model: cost-aware routing among OpenAI-compatible providers
 * (src/app/model-call/provider-set.ts). Providers speak OpenAI's API only, so the KServe
 * surfaces refuse such a model instead of guessing a translation.
 */
async function routeWiseModel(call: Call, spec: RouteWiseSpec): Promise<Response> {
  if (call.surface.kind !== "openai" || call.json === null) {
    return call.errors.reply(400, `Model '${call.model}' is routed by RouteWise among OpenAI-compatible providers; call it on the OpenAI endpoints (/v1/chat/completions, /v1/completions)`, "unsupported_surface");
  }
  const apiPath = call.surface.apiPath;
  const outcome = await callRouteWise({
    env: call.env,
    ctx: call.ctx,
    random: call.deps.random,
    state: call.deps.state,
    snapshot: call.snapshot,
    spec,
    request: call.request,
    apiPath,
    json: call.json,
    promptChars: promptText(apiPath, call.json).length,
    headers: upstreamRequestHeaders(call.request.headers, { contentType: "application/json", bodyRewritten: true }),
    startedAt: call.startedAt,
  });
  return outcomeResponse(call, outcome);
}

/**
 * A model whose target is a graph: the request body is the graph's input. Success is
 * the graph's answer as is (streamed when the graph ends in one upstream call); a
 * failure is told in the calling surface's error shape.
 */
async function runModelGraph(call: Call, graphName: string): Promise<Response> {
  const graph = call.snapshot.graphs.get(graphName);
  if (!graph) return call.errors.reply(500, `model '${call.model}' targets graph '${graphName}', which is not loaded`, "graph_missing");
  const { env, ctx, request, snapshot } = call;
  const headers = stepHeaders(request.headers, snapshot.headerPatterns, snapshot.clientKeyDigests.length > 0);
  const io = graphIO({ env, ctx, random: call.deps.random, state: call.deps.state, snapshot, graph: graphName, request, headers, startedAt: call.startedAt });
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
