/**
 * The model-call layer: every surface hands a request for a model to `callModel` and
 * words the outcome in its own shape. Whatever only the upstream needs (its path, its
 * headers, the body renamed for the upstream's model name, what a policy reads of the
 * prompt, priority and latency objectives) is worked out here, so a new dialect is a
 * translation plus a route, never a new path to upstream.
 */
import { clock } from "../../lib/clock";
import { predictPath } from "../../core/graph/compile";
import { runGraph } from "../../core/graph/executor";
import { meteredRequest, requestTerms } from "../../core/routewise/request-terms";
import type { Principal } from "../../core/limits/principal";
import type { LimitGate } from "./limits";
import { admit, isUpstreamRateLimit, predictionFor } from "./limits";
import type { GraphCharge } from "./limits";
import type { ModelTarget } from "../../core/targets/model-target";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import { upstreamRequestHeaders } from "../../core/upstream/headers";
import { stepHeaders } from "../../core/upstream/propagate";
import type { RandomSource } from "../../lib/random";
import type { StateBindings } from "../state/bindings";
import type { IsolateState } from "../state/isolate-state";
import { graphAnswer, graphIO, routeHeaders } from "./graph";
import { upstreamError } from "../../core/upstream/error-words";
import { parseJson } from "../../lib/json";
import { readUpTo } from "../../lib/bounded-read";
import { bodyJson, GraphUsage } from "./graph-usage";
import { MAX_SCRUBBED_BYTES } from "../engine/error-scrub";
import { callPool } from "./pool";
import type { PoolOutcome } from "./pool";
import { prefetchView } from "./pool-session";
import { callRouteWise } from "./provider-set";
import { anthropicAsChat, anthropicBody, MESSAGES_PATH } from "./anthropic-upstream";
import { featuresFor } from "./request-features";
import { requestHints } from "./request-hints";
import type { Span } from "../telemetry/trace";
import { graphSpans } from "../telemetry/graph-spans";
import { traceModel } from "./trace-facts";

/** What a call needs of the isolate and the invocation. */
export interface CallContext {
  env: StateBindings;
  ctx: ExecutionContext;
  random: RandomSource;
  state: IsolateState;
  snapshot: ConfigSnapshot;
  /** The request's server span (docs/telemetry.md); absent: the request is not traced. */
  trace?: Span;
}

/** The API a request came in on: it decides the upstream path and whether the body may be rewritten. */
export type Dialect =
  | { kind: "openai"; apiPath: string } // chat completions, completions, embeddings: the path is forwarded as is
  | { kind: "kserve"; protocol: "v1" | "v2"; version?: string } // the body passes untouched; the path is built from the upstream's model name (and the version the client named)
  | { kind: "graph" }; // /graphs/<name>: the body is the graph's input

export interface ModelRequest {
  dialect: Dialect;
  /** The body as received. */
  body: Uint8Array;
  /** The parsed body, when the dialect is JSON the router reads (OpenAI). */
  json: Record<string, unknown> | null;
  /** The client's request: its headers, its abort signal, where it entered (`cf`). */
  request: Request;
  /** The client's bearer credential (affinity keys on it when there is no user field). */
  bearer: string | undefined;
  /** An operator's replica override (`X-Route-Pin` with the admin token), already authenticated. */
  forced: string | null;
  startedAt: number;
  /** The client's own Anthropic Messages body (translated to chat in `json`): an Anthropic-native replica gets it as is. */
  native?: { anthropic: Record<string, unknown> };
  /** Whom the request is charged to (its client key's name and team, a trusted tenant): limits match on it. */
  principal?: Principal | undefined;
}

export type ModelOutcome =
  /** `dialect: "anthropic"`: an Anthropic-native replica answered a request that came with `native.anthropic`, untranslated. */
  | { ok: true; response: Response; dialect?: "anthropic" }
  | { ok: false; status: number; code: string; message: string; param?: string; headers: Record<string, string> };

const CHAT_PATH = "/v1/chat/completions";

/**
 * A request for a model, within the limits of whoever sends it (./limits.ts): admitted
 * (or refused with 429) before anything is sent, settled as the call ends, and answered
 * with the principal's x-ratelimit headers.
 */
export async function callModel(cx: CallContext, target: ModelTarget, req: ModelRequest): Promise<ModelOutcome> {
  traceModel(cx.trace, cx.snapshot, target, req.dialect, req.json);
  if (cx.snapshot.limits.scopes.length === 0) return dispatch(cx, target, req, null);
  // On a cold isolate, the pool's object starts answering while the limits' objects do.
  if (target.kind === "pool") prefetchView(cx, target.route);
  const embeddings = req.dialect.kind === "openai" && req.dialect.apiPath.endsWith("/embeddings");
  const graph = target.kind === "graph" ? graphCharge(target.graph.name, req) : undefined;
  const predicted = predictionFor(req.json, req.body.byteLength, embeddings);
  // A graph is reserved its input alone (limits.md): its steps' output is unknown before they run.
  const prediction = graph ? { promptTokens: predicted.promptTokens, outputTokens: 0 } : predicted;
  const admitting = admit(cx, req.principal, target.model, prediction, req.request.signal, graph);
  const admission = admitting instanceof Promise ? await admitting : admitting;
  if (!admission.ok) return { ok: false, status: admission.status, code: admission.code, message: admission.message, headers: admission.headers };
  const gate = admission.gate;
  if (!gate) return dispatch(cx, target, req, null);
  if (target.kind === "graph") return withLimitHeaders(await callLimitedGraph(cx, target, req, gate), gate);
  gate.watch(req.request.signal);
  let outcome: ModelOutcome;
  try {
    outcome = await dispatch(cx, target, req, gate);
  } catch (error) {
    gate.settle("failed");
    throw error;
  }
  // A failure that never reached the engine (a refused session, no route) settles here; the
  // engine already settled any other (settling twice does nothing).
  if (!outcome.ok) gate.settle("failed");
  return withLimitHeaders(outcome, gate);
}

/** How a graph request is charged: on its own path its body is read here for the model it names (its steps are priced as that model). */
function graphCharge(name: string, req: ModelRequest): GraphCharge {
  const json = req.json ?? bodyJson(req.body);
  const named = typeof json?.model === "string" ? json.model : undefined;
  return { name, ownPath: req.dialect.kind === "graph", ...(named !== undefined && { named }) };
}

/** A limited graph is charged the sum of its steps' use, answered or failed, once the last step's body ends. */
async function callLimitedGraph(cx: CallContext, target: Extract<ModelTarget, { kind: "graph" }>, req: ModelRequest, gate: LimitGate): Promise<ModelOutcome> {
  const usage = new GraphUsage(cx.snapshot.config, target.model, (use) => gate.settleSteps(use));
  try {
    return await callGraph(cx, target, req, usage);
  } finally {
    usage.finish();
  }
}

function dispatch(cx: CallContext, target: ModelTarget, req: ModelRequest, gate: LimitGate | null): Promise<ModelOutcome> {
  switch (target.kind) {
    case "pool":
      return callPoolTarget(cx, target, req, gate);
    case "provider_set":
      return callProviderSet(cx, target, req, gate);
    case "graph":
      return callGraph(cx, target, req);
  }
}

/** An error's headers without an upstream's rate-limit headers: a limited principal's are the router's own (LimitGate.setHeaders). */
function withoutRateLimits(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !isUpstreamRateLimit(name)));
}

function withLimitHeaders(outcome: ModelOutcome, gate: LimitGate): ModelOutcome {
  if (!outcome.ok) return { ...outcome, headers: { ...withoutRateLimits(outcome.headers), ...gate.headers() } };
  try {
    gate.setHeaders(outcome.response.headers);
    return outcome;
  } catch {
    const response = new Response(outcome.response.body, outcome.response); // immutable headers (a response passed through as fetched): the first set threw
    gate.setHeaders(response.headers);
    return { ...outcome, response };
  }
}

async function callPoolTarget(cx: CallContext, target: Extract<ModelTarget, { kind: "pool" }>, req: ModelRequest, gate: LimitGate | null): Promise<ModelOutcome> {
  const { route } = target;
  const { request } = req;
  if (req.forced !== null && !route.replicas.some((r) => r.id === req.forced)) {
    return refused(400, "unknown_replica", `X-Route-Pin names replica '${req.forced}', which is not in pool '${route.pool}'`, "x-route-pin");
  }
  const hints = requestHints(route.priority, request.headers);
  if (!hints.ok) return refused(400, hints.code, hints.message, hints.param);

  // The upstream path is the router's own: on the KServe surfaces it is built from the
  // model the pool serves, never copied from the client's path.
  const upstreamModel = route.upstreamModel ?? target.model;
  const apiPath = req.dialect.kind === "openai" ? req.dialect.apiPath : req.dialect.kind === "kserve" ? predictPath(req.dialect.protocol, upstreamModel, req.dialect.version) : null;
  if (apiPath === null) return refused(400, "unsupported_surface", `Model '${target.model}' is a pool; call it on a model endpoint`);
  const renamed = req.json !== null && route.upstreamModel !== undefined;
  // A limited request's stream asks for its usage chunk, so the limit is charged what the upstream counted.
  const metered = gate !== null && req.json !== null && req.json.stream === true ? meteredRequest(req.json, upstreamModel) : null;
  const body = metered ? new TextEncoder().encode(JSON.stringify(metered.body)) : renamed ? new TextEncoder().encode(JSON.stringify({ ...req.json, model: route.upstreamModel })) : req.body;
  const headers = upstreamRequestHeaders(request.headers, req.json !== null ? { contentType: "application/json", bodyRewritten: true } : {});
  // Anthropic-native replicas get the request in their own dialect; none can take it: refused before anything is sent.
  const anthropic = route.replicas.some((r) => r.dialect === "anthropic") ? anthropicBody(req.native?.anthropic, apiPath === CHAT_PATH ? req.json : null, upstreamModel) : null;
  if (anthropic && !anthropic.ok && route.candidates.every((r) => r.dialect === "anthropic")) {
    return refused(400, "unsupported_surface", `Model '${target.model}' is served by Anthropic-native replicas: ${anthropic.message}`, anthropic.param);
  }
  const pool = cx.snapshot.config.pools[route.pool]!;
  // Only the shared-state path picks with a scoring policy; stateless routing reads weights alone.
  const features = cx.snapshot.config.routing.shared_state ? featuresFor(request, route, pool.policy, pool.locality, apiPath, req.json) : undefined;
  const outcome = await callPool({
    ...cx,
    route,
    request,
    bearer: req.bearer,
    apiPath,
    body,
    headers,
    forced: req.forced,
    affinity: true,
    startedAt: req.startedAt,
    features,
    priority: hints.priority,
    slo: hints.slo,
    ...(anthropic?.ok && { anthropic: { apiPath: MESSAGES_PATH, body: anthropic.body } }),
    ...(gate && { observers: [gate.observer], meter: true, hideUsageChunk: metered?.hideUsageChunk ?? false }),
  });
  const answeredBy = outcome.ok ? route.replicas.find((r) => r.id === outcome.response.headers.get("x-switchyard-replica")) : undefined;
  if (outcome.ok && answeredBy?.dialect === "anthropic") return nativeAnswer(req, outcome.response, target.model);
  return fromPoolOutcome(cx, outcome);
}

/** An Anthropic-native upstream's answer: as it came to a client that spoke Anthropic, else as a chat completion. */
async function nativeAnswer(req: ModelRequest, response: Response, model: string): Promise<ModelOutcome> {
  if (req.native) return { ok: true, response, dialect: "anthropic" };
  return { ok: true, response: await anthropicAsChat(response, req.json ?? {}, model) };
}

/**
 * A RouteWise model: cost-aware routing among providers that speak chat completions (or
 * Anthropic's Messages, translated). KServe's tensors have no translation to either, so
 * the KServe paths are refused instead of guessing one.
 */
async function callProviderSet(cx: CallContext, target: Extract<ModelTarget, { kind: "provider_set" }>, req: ModelRequest, gate: LimitGate | null): Promise<ModelOutcome> {
  if (req.dialect.kind !== "openai" || req.json === null) {
    return refused(400, "unsupported_surface", `Model '${target.model}' is routed by RouteWise among LLM providers, which take no KServe tensors; call it on /v1/chat/completions, /v1/responses or /v1/messages (or /v1/completions and /v1/embeddings, where its routes speak chat completions)`);
  }
  const apiPath = req.dialect.apiPath;
  // What the request commits the operator's account to: priced, or refused before anything is sent.
  const terms = requestTerms(req.json);
  if (!terms.ok) return refused(400, terms.code, terms.message, terms.param);
  const nativeRoutes = target.spec.routes.filter((r) => r.dialect === "anthropic");
  let anthropic: ((model: string) => Uint8Array | null) | undefined;
  if (nativeRoutes.length > 0) {
    const chat = apiPath === CHAT_PATH ? req.json : null;
    const probe = anthropicBody(req.native?.anthropic, chat, target.model);
    if (!probe.ok && nativeRoutes.length === target.spec.routes.length) {
      return refused(400, "unsupported_surface", `Model '${target.model}' is routed among Anthropic-native providers: ${probe.message}`, probe.param);
    }
    if (probe.ok) anthropic = (model) => {
      const made = anthropicBody(req.native?.anthropic, chat, model);
      return made.ok ? made.body : null;
    };
  }
  const outcome = await callRouteWise({
    ...cx,
    spec: target.spec,
    request: req.request,
    apiPath,
    json: req.json,
    promptTokens: terms.promptTokens,
    choices: terms.choices,
    headers: upstreamRequestHeaders(req.request.headers, { contentType: "application/json", bodyRewritten: true }),
    startedAt: req.startedAt,
    ...(anthropic && { anthropic }),
    ...(gate && { observers: [gate.observer] }),
  });
  const answeredBy = outcome.ok ? target.spec.routes.find((r) => r.id === outcome.response.headers.get("x-switchyard-route")) : undefined;
  if (outcome.ok && answeredBy?.dialect === "anthropic") return nativeAnswer(req, outcome.response, target.model);
  return fromPoolOutcome(cx, outcome);
}

/**
 * A graph: the request body is its input. Success is the graph's answer as is (streamed
 * when it ends in one upstream call); a failure carries the route taken in its headers.
 */
async function callGraph(cx: CallContext, target: Extract<ModelTarget, { kind: "graph" }>, req: ModelRequest, usage?: GraphUsage): Promise<ModelOutcome> {
  const { graph } = target;
  const { request } = req;
  const { snapshot } = cx;
  const headers = stepHeaders(request.headers, snapshot.headerPatterns, snapshot.clientKeyDigests.length > 0);
  const spans = graphSpans(cx.trace, graph.name);
  const io = graphIO({ ...cx, graph: graph.name, request, headers, startedAt: req.startedAt, spans, usage });
  const run = await runGraph(graph, req.body, io, request.signal);
  spans?.finish(run);
  cx.state.graphRuns.record(graph.name, { at: clock.now(), route: run.trace, status: run.result.ok ? 200 : run.result.status });
  // A request to one of the graph's models is counted by the graph's object: the status its client gets (499 once it has left), and ms to the graph's answer.
  const count = (status: number) => {
    if (req.dialect.kind === "graph") return;
    const counters = cx.state.graphCounters(cx.env, graph.name);
    counters.finished(target.model, request.signal.aborted ? 499 : status, Date.now() - req.startedAt);
    counters.nudge(cx.ctx);
  };
  const result = run.result;
  // A Hard step's failure answers the graph with its own status and body (KServe); a client of a model endpoint gets it in its surface's shape.
  if (result.ok && req.dialect.kind !== "graph" && (result.status < 200 || result.status >= 300)) {
    count(result.status);
    // A last step's answer comes as a stream; an error's is short, and read here for its words, as far as the engine's error scrub reads one.
    const body = result.stream ? await readUpTo(result.stream, null, MAX_SCRUBBED_BYTES).catch(() => null) : result.body;
    const parsed = body === null ? { ok: false as const } : parseJson(body);
    const words = upstreamError(parsed.ok ? parsed.value : null, result.status);
    return { ok: false, status: result.status, code: "graph_error", message: `graph '${graph.name}': a step answered ${result.status}: ${words.message}`, headers: Object.fromEntries(routeHeaders(run)) };
  }
  if (result.ok) {
    const response = graphAnswer(run, result, graph.name);
    count(response.status);
    return { ok: true, response };
  }
  count(result.status);
  // On a model endpoint the graph is named; on its own path (KServe's router) the cause stands alone, as KServe words it.
  const message = req.dialect.kind === "graph" ? result.cause : `graph '${graph.name}': ${result.cause}`;
  return { ok: false, status: result.status, code: "graph_error", message, headers: Object.fromEntries(routeHeaders(run)) };
}

function fromPoolOutcome(cx: CallContext, outcome: PoolOutcome): ModelOutcome {
  if (outcome.ok) return { ok: true, response: outcome.response };
  const headers: Record<string, string> = outcome.attempts.length > 0 ? { "x-switchyard-attempts": String(outcome.attempts.length) } : {};
  if (outcome.retryAfterS !== undefined) headers["retry-after"] = String(outcome.retryAfterS);
  // Through the config's redactions: a replica id or an error text may hold a ${VAR} value.
  return { ok: false, status: outcome.status, code: outcome.code, message: cx.snapshot.redactions.text(outcome.message), headers };
}

function refused(status: number, code: string, message: string, param?: string): ModelOutcome {
  return { ok: false, status, code, message, headers: {}, ...(param !== undefined && { param }) };
}
