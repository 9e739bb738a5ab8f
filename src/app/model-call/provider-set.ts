/**
 * A request to a RouteWise model (a provider set). The isolate's views (envelopes, quotas,
 * slots) feed the decision (src/core/routewise/decide.ts); its order becomes a plan for the
 * attempt engine: each route a try, a concurrency route only once it holds a slot, an
 * optional latency hedge, every answer metered as it streams. Each try's slot, quota
 * reservation, verdict and cost are observers (./route-accounts.ts), settled once however
 * the try ends. In steady state nothing here awaits an object: only a first request (no
 * view yet) and a slot miss do.
 */
import { clock } from "../../lib/clock";
import { hedgeDelayMs, routeOrder } from "../../core/routewise/decide";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { hidesUsageChunk, meteredRequest } from "../../core/routewise/request-terms";
import { askedOutputTokens } from "../../core/routewise/tokens";
import type { RequestShape } from "../../core/routewise/types";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import { failureReply, retryAfterUntil } from "../../core/upstream/attempts";
import { replicaUrl } from "../../core/upstream/url";
import type { RandomSource } from "../../lib/random";
import { runPlan } from "../engine/engine";
import type { AttemptInfo, PlannedTry, PlanObserver } from "../engine/plan";
import type { StateBindings as Env } from "../state/bindings";
import type { IsolateState } from "../state/isolate-state";
import type { QuotaAgent } from "../state/routewise/quota-agent";
import type { SlotAgent } from "../state/routewise/slot-agent";
import type { RouteWiseAgents } from "../state/routewise/views";
import { agentViews, decideNow, missingCalibration } from "../state/routewise/views";
import { MESSAGES_PATH } from "./anthropic-upstream";
import type { PoolOutcome } from "./pool";
import { routeAccount } from "./route-accounts";
import type { Span } from "../telemetry/trace";
import { attemptSpans } from "../telemetry/attempt-spans";
import { decided, logFields } from "../telemetry/decision";
import { routewiseDecision } from "./trace-facts";
import { scrubbing } from "./scrub";

export const SLOT_TICK_MS = 2_000; // a held slot's grant is renewed at least this often while its request runs (grants live 10 s)

export interface RouteWiseCall {
  env: Env;
  ctx: ExecutionContext;
  random: RandomSource;
  state: IsolateState;
  snapshot: ConfigSnapshot;
  spec: RouteWiseSpec;
  request: Request;
  apiPath: string;
  /** The parsed OpenAI body; each route gets it with its own upstream model name. */
  json: Record<string, unknown>;
  /** The prompt tokens the whole body is estimated to hold (src/core/routewise/tokens.ts). */
  promptTokens: number;
  /** Answers asked for (`n`, `best_of`): the output is priced and held this many times. */
  choices: number;
  headers: Headers;
  startedAt: number;
  /** The body an Anthropic-native route (`dialect: anthropic`) gets, by its model name; absent or null: such a route is not tried. */
  anthropic?: (model: string) => Uint8Array | null;
  /** More observers of the plan (a limit's settlement, ./limits.ts). */
  observers?: readonly PlanObserver[];
  /** The span this call's decision and attempts go under (docs/telemetry.md). */
  trace?: Span;
}

export async function callRouteWise(call: RouteWiseCall): Promise<PoolOutcome> {
  const { spec, ctx } = call;
  const deciding = Date.now();
  const agents = routeWiseAgents(call.env, call.state, spec);
  await Promise.all([agents.model.ready(ctx), ...[...new Set(agents.quotas.values())].map((q) => q.ready(ctx)), ...[...new Set(agents.slots.values())].map((s) => s.ready(ctx))]);

  if (spec.quotaBearing && !agents.model.hasView) {
    // Without the envelope this isolate cannot tell whether the model is calibrated: say so, rather than "uncalibrated".
    return { ok: false, status: 503, code: "routewise_state_unavailable", message: `Model '${spec.model}': its latency envelope could not be read from its Durable Object just now; retry shortly`, attempts: [] };
  }
  const uncalibrated = spec.quotaBearing ? missingCalibration(spec, agents.model) : [];
  if (uncalibrated.length > 0) {
    return {
      ok: false,
      status: 503,
      code: "routewise_uncalibrated",
      message: `Model '${spec.model}' is not calibrated: it has quota routes, and ${uncalibrated.join(", ")} ${uncalibrated.length === 1 ? "has" : "have"} fewer than envelope_min_samples (${spec.params.envelope_min_samples}) latency samples. Seed them with \`switchyard calibrate\` or POST /admin/routewise/${spec.model}/calibrate`,
      attempts: [],
    };
  }

  const shape = requestShape(call);
  const decision = decideNow(spec, agentViews(agents), shape);
  for (const r of decision.routes) {
    if (r.why === "quota_exhausted") {
      const quota = agents.quotas.get(r.id);
      quota?.short();
      quota?.nudge(ctx);
    }
  }
  const order = routeOrder(decision, call.random);
  decided(call.trace, `route ${spec.model}`, deciding, () => routewiseDecision(spec, decision, order));
  if (order.length === 0) {
    // Every route in its circuit's cooldown: the client comes back when the first may take a probe.
    const reopens = decision.routes.every((r) => r.why === "unhealthy") ? decision.routes.flatMap((r) => agents.model.circuit(r.id)?.reopenAt ?? []) : [];
    return noRoute(spec, decision.routes.map((r) => `${r.id} (${r.why ?? "not chosen"})`), reopens.length > 0 ? retryAfterUntil(Math.min(...reopens), clock.now()) : undefined);
  }
  agents.model.routed();

  const predicted = new Map(decision.routes.map((r) => [r.id, r.outputTokens]));
  const byId = new Map(spec.routes.map((r) => [r.id, r]));
  const held = new Set<SlotAgent>();
  const log = logFields(call.trace);
  const busy: string[] = [];
  let next = 0;
  const plan = {
    /** The next route in order that can be sent to now: a concurrency route needs a slot first. */
    async next(): Promise<PlannedTry | null> {
      while (next < order.length) {
        const route = byId.get(order[next++]!)!;
        const native = route.dialect === "anthropic" ? (call.anthropic?.(route.upstream_model ?? spec.model) ?? null) : undefined;
        if (native === null) continue; // this request cannot be said in the route's dialect
        const slot = agents.slots.get(route.id);
        if (slot && !slot.tryTake() && !(await slot.acquire(ctx, log))) {
          busy.push(route.id); // every slot busy: the next route
          continue;
        }
        if (slot) held.add(slot);
        const account = routeAccount({ route, agents, shape, predictedOutput: predicted.get(route.id) ?? 0, slot, keeper: ctx });
        const released = slot && { ended: () => held.delete(slot) };
        if (native) return { target: { id: route.id, url: replicaUrl(route, MESSAGES_PATH), apiKey: route.api_key, dialect: "anthropic" }, body: native, observers: released ? [account, released] : [account] };
        return {
          target: { id: route.id, url: replicaUrl(route, call.apiPath), apiKey: route.api_key },
          body: JSON.stringify(meteredRequest(call.json, route.upstream_model ?? spec.model).body),
          observers: released ? [account, released] : [account],
        };
      }
      return null;
    },
    hasMore: () => next < order.length,
  };
  const routing = call.snapshot.config.routing;
  const result = await runPlan({
    ...plan,
    headers: call.headers,
    policy: { tryTimeoutMs: routing.try_timeout_ms, deadlineMs: routing.deadline_ms, retryable: (status) => routing.retry_on.includes(status), deliverLastAnswer: false },
    meter: true,
    hideUsageChunk: hidesUsageChunk(call.json),
    ...scrubbing(call.snapshot.redactions),
    ...(spec.params.latency_hedge_mode !== "off" && { hedgeAfterMs: (target) => hedgeDelayMs(spec.params, agents.model.envelope(target.id)) }),
    signal: call.request.signal,
    startedAt: call.startedAt,
    logFields: log,
    waitUntil: (promise) => ctx.waitUntil(promise),
    // Held slots' grants are renewed while their requests run.
    tick: spec.slots.size > 0 ? { everyMs: SLOT_TICK_MS, run: () => held.forEach((s) => s.nudge(ctx)) } : undefined,
    observers: [hedgeCounters(agents), requestEnd(agents, spec.model, call.startedAt, ctx), ...(call.observers ?? []), ...attemptSpans(call.trace)],
    decorate: (headers, winner, hedged) => {
      headers.set("x-switchyard-route", winner.id);
      if (hedged) headers.set("x-switchyard-hedge", "fired");
    },
  });
  if (result.delivered) return { ok: true, response: result.response, attempts: result.attempts };
  if (result.attempts.length === 0 && !result.clientGone && !result.deadlineHit && busy.length > 0) {
    return noRoute(spec, busy.map((id) => `${id} (no_free_slot)`));
  }
  const reply = failureReply(spec.model, result.attempts, result.deadlineHit, result.clientGone);
  return { ok: false, status: reply.status, code: reply.code, message: reply.message, attempts: result.attempts, ...(reply.retryAfterS !== undefined && { retryAfterS: reply.retryAfterS }) };
}

function noRoute(spec: RouteWiseSpec, why: string[], retryAfterS?: number): PoolOutcome {
  return { ok: false, status: 503, code: "no_feasible_route", message: `No route of model '${spec.model}' can take this request now: ${why.join(", ")}`, attempts: [], ...(retryAfterS !== undefined && { retryAfterS }) };
}

/** The model's hedge counters: fired, and which leg of the race won. */
function hedgeCounters(agents: RouteWiseAgents): PlanObserver {
  let race: { primary: AttemptInfo; secondary: AttemptInfo } | null = null;
  return {
    hedged(primary, secondary) {
      race = { primary, secondary };
      agents.model.hedge("fired");
    },
    delivered(winner) {
      if (race && winner.index === race.primary.index) agents.model.hedge("won_by_primary");
      else if (race && winner.index === race.secondary.index) agents.model.hedge("won_by_hedge");
    },
  };
}

/**
 * The request's end, told once by the engine however it came (the last byte, the client
 * leaving, every route failing): its status and duration go to the model's counters, as
 * a pool's session reports its requests (/metrics' switchyard_routewise_model_requests_total).
 */
function requestEnd(agents: RouteWiseAgents, model: string, startedAt: number, keeper: ExecutionContext): PlanObserver {
  let answered: number | null = null; // the winner's status (after a hedge the last attempt may be the loser's)
  return {
    ended: (_a, end) => {
      if (end.won && end.attempt.outcome.kind === "answered") answered = end.attempt.outcome.status;
    },
    settled: (s) => {
      const status = s.delivered ? (answered ?? 200) : failureReply(model, s.attempts, s.deadlineHit, s.clientGone).status;
      agents.model.finished(status, Date.now() - startedAt);
      agents.model.nudge(keeper);
    },
  };
}

/** One RouteWise model's agents in this isolate: its envelope view, and the quotas and slots of its routes. */
export function routeWiseAgents(env: Env, state: IsolateState, spec: RouteWiseSpec): RouteWiseAgents {
  const quotas = new Map<string, QuotaAgent>();
  const slots = new Map<string, SlotAgent>();
  for (const [route, q] of spec.quotas) quotas.set(route, state.quota(env, q));
  for (const [route, s] of spec.slots) slots.set(route, state.slots(env, s.id, s.limit));
  return { model: state.routewise(env, spec.model, spec.settings), quotas, slots };
}

function requestShape(call: RouteWiseCall): RequestShape {
  const asked = askedOutputTokens(call.json); // refused at the surface when malformed
  return { promptTokens: call.promptTokens, maxTokens: asked.ok ? asked.tokens : null, choices: call.choices };
}
