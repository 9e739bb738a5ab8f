import type { StateBindings as Env } from "../state/bindings";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import type { RandomSource } from "../../lib/random";
import { uniformFloat } from "../../lib/random";
import type { IsolateState } from "../state/isolate-state";
import type { Attempt } from "../../core/upstream/attempts";
import { attemptCause } from "../../core/upstream/attempts";
import { runPlan } from "../engine/engine";
import { fixedTries } from "../engine/tries";
import { callPool } from "./pool";
import { readsRequests } from "../../core/picking/policies";
import { featuresFor } from "./request-features";
import { abTestArm } from "../../core/graph/bandits";
import type { BanditParams } from "../../core/graph/bandits";
import type { CompiledNode, ServiceTarget } from "../../core/graph/compile";
import type { GraphIO, GraphRun, NodeResult, RouteChoice, ServiceCall } from "../../core/graph/executor";
import { isJsonObject, parseJson } from "../../lib/json";
import { hidesUsageChunk, withUsageAsked } from "../../core/routewise/request-terms";
import { parseSeldonRoute } from "../../core/graph/seldon";
import { banditRpc } from "../state/stubs";
import type { GraphSpans } from "../telemetry/graph-spans";
import type { Span } from "../telemetry/trace";
import { attemptSpans } from "../telemetry/attempt-spans";
import { logFields } from "../telemetry/decision";
import type { PlanObserver } from "../engine/plan";
import type { GraphUsage } from "./graph-usage";
import { scrubbing } from "./scrub";

const RETRY_BASE_MS = 50; // first backoff; doubles per retry, with full jitter
const ROUTER_TIMEOUT_MS = 10_000; // an external router that takes longer is not routing, it is failing

/** What a graph request's I/O needs from the Worker: bindings, this isolate's state, the client's request. */
export interface GraphSeam {
  env: Env;
  ctx: ExecutionContext;
  random: RandomSource;
  state: IsolateState;
  snapshot: ConfigSnapshot;
  /** The graph's name: requests to pools are counted under `graph:<name>`. */
  graph: string;
  request: Request;
  /** The step headers (src/core/upstream/propagate.ts), the same for every step. */
  headers: Headers;
  /** When the graph request started: routing.deadline_ms bounds the whole graph. */
  startedAt: number;
  /** The graph's spans (docs/telemetry.md); absent: not traced. */
  spans?: GraphSpans | undefined;
  /** The step span a call's routing and attempts go under. */
  trace?: Span;
  /** A limited request: every step's answer is metered and summed here (./graph-usage.ts). */
  usage?: GraphUsage | undefined;
}

/**
 * Real I/O for one graph request. Every step, mirror and external router call goes
 * through the router's one attempt engine (src/app/engine/engine.ts), with the same
 * header policy as a pool's requests; a step that targets a pool goes through the pool
 * (src/app/model-call/pool.ts), with its replica picking, circuits and load.
 */
export function graphIO(seam: GraphSeam): GraphIO {
  const untraced = (s: GraphSeam, call: ServiceCall, metered?: StepMeter) => (call.target.kind === "pool" ? callPoolStep(s, call, call.target, metered) : callUrl(s, call, call.target.url, metered));
  const traced = (call: ServiceCall, metered?: StepMeter) => (seam.spans ? seam.spans.step(call, (trace) => untraced({ ...seam, trace }, call, metered)) : untraced(seam, call, metered));
  const callService = seam.usage ? meteredSteps(seam.usage, traced) : (call: ServiceCall) => traced(call);
  return {
    random: seam.random,
    callService,
    mirror(call) {
      // Independent of the client's request: a shadow copy finishes (or times out) on its own.
      seam.ctx.waitUntil(traced({ ...call, tail: false, signal: new AbortController().signal }).then((r) => void (r.ok ? r.stream?.cancel() : undefined)));
    },
    route: (graph, node, compiled, input, signal) =>
      seam.spans ? seam.spans.route(node, compiled.router?.type ?? "none", () => chooseRoute(seam, graph, node, compiled, input, signal)) : chooseRoute(seam, graph, node, compiled, input, signal),
  };
}

/** How a limited request's step is metered: its plan's observer, and whether the stream carries a usage chunk the router asked for. */
interface StepMeter {
  observer: PlanObserver;
  hideUsageChunk: boolean;
}

/**
 * Steps whose answers are metered for a limit: a step's use is in once its result is (a
 * buffered body was read to its end), or, for a streamed tail step, once its body ends.
 * A streamed step is asked for its usage chunk, as a model's stream is, so it is charged
 * what its upstream counted rather than an estimate; a chunk the client did not ask for
 * is kept from it.
 */
function meteredSteps(usage: GraphUsage, call: (c: ServiceCall, metered: StepMeter) => Promise<NodeResult>): (c: ServiceCall) => Promise<NodeResult> {
  return async (c) => {
    const asked = usageAsked(c.body);
    const metered = asked ? { ...c, body: asked } : c;
    const step = usage.step(metered);
    let result: NodeResult | undefined;
    try {
      result = await call(metered, { observer: step.observer, hideUsageChunk: asked !== null });
      return result;
    } finally {
      if (!(result?.ok && result.stream)) step.close();
    }
  };
}

const STEP_USAGE_MAX_BYTES = 1024 * 1024; // a step body bigger than this is sent as it is (and estimated)

/** A step's body with `stream_options.include_usage` added, when it asks for a stream without it; else null (sent as it is). */
function usageAsked(body: Uint8Array): Uint8Array | null {
  if (body.byteLength > STEP_USAGE_MAX_BYTES) return null;
  const parsed = parseJson(body);
  if (!parsed.ok || !isJsonObject(parsed.value) || !hidesUsageChunk(parsed.value)) return null;
  return new TextEncoder().encode(JSON.stringify(withUsageAsked(parsed.value)));
}

/** A step on one URL: retried after a connect error, a timeout or a 5xx, with jittered backoff; the last answer stands, as in KServe. */
async function callUrl(seam: GraphSeam, call: ServiceCall, url: string, metered?: StepMeter): Promise<NodeResult> {
  const result = await runPlan({
    ...fixedTries(Array.from({ length: call.retries + 1 }, () => ({ target: { id: call.label, url }, body: call.body }))),
    headers: seam.headers,
    policy: {
      tryTimeoutMs: call.timeoutMs,
      deadlineMs: seam.snapshot.config.routing.deadline_ms,
      retryable: (status) => status >= 500,
      deliverLastAnswer: true,
      backoffMs: (retry) => uniformFloat(seam.random) * RETRY_BASE_MS * 2 ** (retry - 1),
    },
    signal: call.signal,
    startedAt: seam.startedAt,
    logFields: logFields(seam.trace),
    waitUntil: (promise) => seam.ctx.waitUntil(promise),
    observers: metered ? [...attemptSpans(seam.trace), metered.observer] : attemptSpans(seam.trace),
    ...(metered && { meter: true, hideUsageChunk: metered.hideUsageChunk }),
    ...scrubbing(seam.snapshot.redactions),
  });
  if (result.delivered) return answer(result.response, call);
  const shown = seam.snapshot.redactions;
  return { ok: false, status: 500, cause: shown.text(transportCause(shown.url(url), result.attempts, call.timeoutMs)) };
}

/** A step on a pool: the pool picks and falls back, as for a model; no pins (a graph step is not a conversation). */
async function callPoolStep(seam: GraphSeam, call: ServiceCall, target: Extract<ServiceTarget, { kind: "pool" }>, metered?: StepMeter): Promise<NodeResult> {
  const pool = seam.snapshot.pools.get(target.pool);
  if (!pool) return { ok: false, status: 500, cause: `step ${call.label}: pool "${target.pool}" is not in the config` };
  const settings = seam.snapshot.config.pools[target.pool]!;
  const json = readsRequests(settings.policy) ? stepJson(call.body) : null;
  // The KV cache a step's prompt lands in is the model its body names, as for a client's request to that model.
  const served = typeof json?.model === "string" && json.model !== "" ? json.model : `pool:${target.pool}`;
  const route = { ...pool, model: `graph:${seam.graph}`, upstreamModel: undefined, priority: "standard" as const, cacheTarget: { base: served, adapter: null } };
  const outcome = await callPool({
    env: seam.env,
    ctx: seam.ctx,
    random: seam.random,
    state: seam.state,
    snapshot: seam.snapshot,
    route,
    request: seam.request,
    bearer: undefined,
    signal: call.signal,
    apiPath: target.path,
    body: call.body,
    headers: seam.headers,
    forced: null,
    affinity: false,
    startedAt: seam.startedAt,
    tryTimeoutMs: call.timeoutMs,
    trace: seam.trace,
    features: json === null ? undefined : featuresFor(seam.request, route, settings.policy, settings.locality, target.path, json),
    ...(metered && { observers: [metered.observer], meter: true, hideUsageChunk: metered.hideUsageChunk }),
  });
  if (outcome.ok) return answer(outcome.response, call);
  if (call.signal.aborted) return { ok: false, status: 500, cause: "cancelled" };
  return { ok: false, status: 500, cause: seam.snapshot.redactions.text(`step ${call.label}: ${outcome.message}`) };
}

const STEP_FEATURES_MAX_BYTES = 1024 * 1024; // a prompt worth hashing is far smaller; a bigger body is routed on load alone

/** A step's body as a JSON object, for the pool's scoring policy; null when it is not one (or too big to be worth it). */
function stepJson(body: Uint8Array): Record<string, unknown> | null {
  if (body.byteLength > STEP_FEATURES_MAX_BYTES) return null;
  const parsed = parseJson(body);
  return parsed.ok && isJsonObject(parsed.value) ? parsed.value : null;
}

/**
 * A delivered answer as a step result: streamed when it is the graph's answer, else read
 * whole. A body that breaks off while it is read (the upstream's cut, the deadline, the
 * client leaving) is the step's failure, worded as KServe words a step that failed.
 */
async function answer(response: Response, call: ServiceCall): Promise<NodeResult> {
  const contentType = response.headers.get("content-type");
  if (call.tail && response.body) return { ok: true, status: response.status, body: new Uint8Array(), contentType, stream: response.body };
  try {
    return { ok: true, status: response.status, body: new Uint8Array(await response.arrayBuffer()), contentType };
  } catch (error) {
    if (call.signal.aborted) return { ok: false, status: 500, cause: "cancelled" };
    return { ok: false, status: 500, cause: `step ${call.label}: its answer broke off while it was read (${(error as Error)?.message ?? String(error)})` };
  }
}

/**
 * KServe's wording for a step that never answered, `Post "<url>": <why>`, with the URL
 * as /routing shows it (as written, `${VAR}` unresolved, no userinfo or query): the
 * cause goes back to the client.
 */
function transportCause(shownUrl: string, attempts: readonly Attempt[], timeoutMs: number): string {
  const last = attempts[attempts.length - 1];
  if (!last || last.outcome.kind === "client_gone" || last.outcome.kind === "cancelled") return "cancelled";
  return `Post "${shownUrl}": ${attemptCause(last.outcome, { timeoutMs })}`;
}

async function chooseRoute(seam: GraphSeam, graph: string, node: string, compiled: CompiledNode, input: Uint8Array, signal: AbortSignal): Promise<RouteChoice> {
  const spec = compiled.router;
  if (!spec) return { ok: false, status: 500, cause: `node "${node}" has no router` };
  switch (spec.type) {
    case "random_abtest":
      return { ok: true, route: abTestArm(spec.ratioA, seam.random) };
    case "epsilon_greedy":
    case "thompson_sampling": {
      const agent = seam.state.bandit(seam.env, graph, node, banditParams(spec));
      // A seeded node's reproducible sequence is its object's: one awaited call per request.
      if (agent.seeded) return { ok: true, route: (await banditRpc(seam.env, graph, node).choose(agent.params)).arm };
      await agent.ready(seam.ctx); // waits only for this isolate's first view of the node
      return { ok: true, route: agent.choose(seam.random) };
    }
    case "external": {
      const timeoutMs = Math.min(ROUTER_TIMEOUT_MS, seam.snapshot.config.routing.try_timeout_ms);
      const call: ServiceCall = { target: spec.target!, label: `${node}/router`, body: input, timeoutMs, retries: 0, tail: false, signal };
      const answered = spec.target!.kind === "pool" ? await callPoolStep(seam, call, spec.target!) : await callUrl(seam, call, spec.target!.url);
      if (!answered.ok) return { ok: false, status: 502, cause: `router of node "${node}": ${answered.cause}` };
      if (answered.status < 200 || answered.status >= 300) return { ok: false, status: 502, cause: `router of node "${node}" answered ${answered.status}` };
      const parsed = parseJson(answered.body);
      const route = parsed.ok ? parseSeldonRoute(parsed.value) : null;
      if (route === null) return { ok: false, status: 502, cause: `router of node "${node}" did not answer with a route ({"data":{"ndarray":[[N]]}} or [N])` };
      return { ok: true, route };
    }
  }
}

export function banditParams(spec: NonNullable<CompiledNode["router"]>): BanditParams {
  if (spec.type === "epsilon_greedy") {
    return { kind: "epsilon_greedy", n_branches: spec.n_branches, epsilon: spec.epsilon, best_branch: spec.best_branch ?? null, seed: spec.seed ?? null, ...(spec.branch_names ? { branch_names: spec.branch_names } : {}) };
  }
  if (spec.type === "thompson_sampling") {
    return { kind: "thompson_sampling", n_branches: spec.n_branches, seed: spec.seed ?? null, ...(spec.branch_names ? { branch_names: spec.branch_names } : {}), ...(spec.prior ? { prior: spec.prior } : {}) };
  }
  throw new Error(`not a bandit router: ${spec.type}`);
}

export function routeHeaders(run: GraphRun): Headers {
  const headers = new Headers();
  if (run.trace.length > 0) headers.set("x-switchyard-route", run.trace.join(","));
  if (Object.keys(run.routing).length > 0) headers.set("x-switchyard-routing", JSON.stringify(run.routing));
  return headers;
}

/**
 * A graph's answer to the client (a failure is worded by the surface), as KServe writes it: the final step's status and
 * bytes; `Content-Type: application/json` when the bytes are JSON, else the upstream's
 * own type (KServe leaves it to sniffing). Router choices go into `meta.routing` of a
 * JSON object answer (Seldon's executor drops them) and always into a header.
 */
export function graphAnswer(run: GraphRun, result: Extract<NodeResult, { ok: true }>, graph: string): Response {
  const headers = routeHeaders(run);
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
