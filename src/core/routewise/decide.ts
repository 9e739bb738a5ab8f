import type { RandomSource } from "../../lib/random";
import { uniformFloat } from "../../lib/random";
import { inRange, MAX_OUTPUT_TOKENS_ASKED, MAX_TOKENS_PER_REQUEST } from "./bounds";
import { expectedCost } from "./cost";
import { allocate, type Allocation } from "./lp";
import { predictOutputTokens } from "./output-predictor";
import { MAX_CHOICES } from "./request-terms";
import { percentileAtOrAbove } from "./percentiles";
import type { Demand, Envelope, QuotaView, RequestShape, RouteInput, RouterParams } from "./types";

/** Why a route cannot take this request. */
export type Infeasibility = "quota_exhausted" | "quota_fail_safe" | "no_free_slot" | "unhealthy" | "slo_miss";

/** One route's part in one request's decision: what /routing shows and the request path reads. */
export interface RouteVerdict {
  id: string;
  feasible: boolean;
  /** Null when feasible. */
  why: Infeasibility | null;
  /** Currency for this request on this route (cost.ts). */
  expectedCost: number;
  /** ms: mean TTFT + predicted output tokens × ms per output token (pessimistic for an unmeasured route). */
  expectedLatencyMs: number;
  /** The largest fraction of traffic the route may take now (quota pacing, Little's law); 0 when infeasible. */
  cap: number;
  /** The linear program's share of traffic; 0 when infeasible. */
  fraction: number;
  /** Predicted output tokens on this route, every choice (`n`) included: what it costs and holds of a quota. */
  outputTokens: number;
}

export interface Decision {
  /** One verdict per input route, in the input's order. */
  routes: RouteVerdict[];
  /** The linear program over every route (infeasible ones with cap 0), aligned with `routes`. */
  allocation: Allocation;
  /** True when every feasible route missed the latency SLO, so the SLO was set aside for this request. */
  sloRelaxed: boolean;
}

export interface DecisionInput {
  routes: readonly RouteInput[];
  params: RouterParams;
  request: RequestShape;
  demand: Demand;
}

/** Units of quota one request needs: its tokens (prompt and predicted output), or itself. */
function unitsNeeded(quota: QuotaView, request: RequestShape, outputTokens: number): number {
  return quota.unit === "tokens" ? request.promptTokens + outputTokens : 1;
}

/**
 * Resource and health reasons, most durable first: a failed-safe or used-up quota and a
 * full slot pool are facts from shared state; health is this isolate's own judgement.
 * The SLO is checked afterwards, since it alone may be set aside.
 */
function resourceVerdict(route: RouteInput, request: RequestShape, outputTokens: number): Infeasibility | null {
  if (route.type === "quota") {
    // A quota route the isolate has no view of yet is as unknown as one never polled.
    if (!route.quota || route.quota.failSafe !== null) return "quota_fail_safe";
    if (route.quota.remaining < unitsNeeded(route.quota, request, outputTokens)) return "quota_exhausted";
  }
  if (route.type === "concurrency" && !(route.slots && route.slots.free > 0)) return "no_free_slot";
  if (!route.healthy) return "unhealthy";
  return null;
}

/**
 * The share of traffic a route can take without running out before the demand does.
 * Quota: spend what is left evenly until the window resets — at share x the model uses
 * x × requests/s × seconds-to-reset × units-per-request. Concurrency (Little's law): at
 * share x, x × requests/s × mean seconds per request are in flight, at most the limit.
 * With no demand measured yet, or no reset time or envelope, nothing bounds the share.
 */
function capOf(route: RouteInput, demand: Demand, needed: number): number {
  const rate = demand.requestsPerS;
  if (!(rate > 0)) return 1;
  if (route.type === "quota" && route.quota && route.quota.resetInMs !== null) {
    return share(route.quota.remaining, rate * (route.quota.resetInMs / 1000) * needed);
  }
  if (route.type === "concurrency" && route.slots && route.envelope) {
    return share(route.slots.limit, rate * (route.envelope.meanTotalMs / 1000));
  }
  return 1;
}

/** supply ÷ demand at full traffic, at most 1; no demand (a reset due now, an instant route) bounds nothing. */
function share(supply: number, demandAtFullTraffic: number): number {
  return demandAtFullTraffic > 0 ? Math.min(1, supply / demandAtFullTraffic) : 1;
}

/**
 * A route whose recent TTFT at the SLO percentile exceeds the SLO. A route with fewer
 * than envelope_min_samples recent samples cannot be judged and passes: one slow answer
 * must not shut a route out for a whole latency window, in which it would get no traffic
 * to prove itself again.
 */
function missesSlo(envelope: Envelope | null, params: RouterParams): boolean {
  if (params.latency_slo_ms === undefined || !envelope || envelope.recent.samples < params.envelope_min_samples) return false;
  const ttft = percentileAtOrAbove(envelope.recent.ttftMs, params.latency_slo_percentile);
  return ttft !== undefined && ttft > params.latency_slo_ms;
}

const MAX_EXPECTED = 1e15; // ms or currency per request: far past any real one (bounds.ts), small enough that the LP's sums stay finite

/** `x` within [0, max]; NaN or +Infinity reads as `max`, the pessimistic end. */
function bounded(x: number, max: number): number {
  return x >= 0 ? Math.min(x, max) : Number.isNaN(x) ? max : 0;
}

/** Every number of an envelope is finite and non-negative. */
function saneEnvelope(e: Envelope): boolean {
  const numbers = [e.samples, e.meanTtftMs, e.meanTotalMs, e.meanPromptTokens, e.meanOutputTokens, e.msPerOutputToken, e.cachedRatio, e.recent.samples];
  for (const p of [e.ttftMs, e.totalMs, e.outputTokens, e.recent.ttftMs]) numbers.push(...Object.values(p));
  return numbers.every((x) => Number.isFinite(x) && x >= 0);
}

/**
 * The decision's inputs as it may believe them: they come from storage, other isolates
 * and clients, and the decision must never throw on any of them. An envelope with a
 * broken number is treated as unmeasured; a quota whose remaining units are not a
 * number fails safe; a reset time or demand that is not finite is unknown; a request's
 * token counts are held to bounds.ts.
 */
function saneInput(input: DecisionInput): Pick<DecisionInput, "routes" | "request" | "demand"> {
  const routes = input.routes.map((r): RouteInput => {
    const envelope = r.envelope && saneEnvelope(r.envelope) ? r.envelope : null;
    let quota = r.quota;
    if (quota && !(Number.isFinite(quota.remaining) && quota.remaining >= 0)) quota = { ...quota, remaining: 0, failSafe: quota.failSafe ?? "source_unreachable" };
    if (quota && quota.resetInMs !== null && !(Number.isFinite(quota.resetInMs) && quota.resetInMs >= 0)) quota = { ...quota, resetInMs: null };
    const slots = r.slots && { free: Number.isFinite(r.slots.free) ? r.slots.free : 0, limit: Number.isFinite(r.slots.limit) ? r.slots.limit : 0 };
    return { ...r, envelope, ...(quota && { quota }), ...(slots && { slots }) };
  });
  const maxTokens = inRange(input.request.maxTokens, MAX_OUTPUT_TOKENS_ASKED) ? input.request.maxTokens : null;
  const choices = Number.isInteger(input.request.choices) && input.request.choices! >= 1 && input.request.choices! <= MAX_CHOICES ? input.request.choices! : 1;
  const request = { promptTokens: bounded(input.request.promptTokens, MAX_TOKENS_PER_REQUEST), maxTokens, choices };
  const rate = input.demand.requestsPerS;
  return { routes, request, demand: { requestsPerS: Number.isFinite(rate) && rate > 0 ? rate : 0 } };
}

/**
 * One request's decision: each route's predicted output, expected latency and cost, its
 * feasibility and cap, and the traffic split the linear program gives the feasible ones.
 */
export function decide(input: DecisionInput): Decision {
  const { params } = input;
  const { routes, request, demand } = saneInput(input);
  // One choice's output sets the latency (choices are generated side by side); all of them, the cost and the quota used.
  const perChoice = routes.map((r) => bounded(predictOutputTokens(params.output_predictor, request.maxTokens, r.envelope), MAX_TOKENS_PER_REQUEST));
  const outputTokens = perChoice.map((t) => t * (request.choices ?? 1));
  const measured = routes.map((r, i) => (r.envelope ? bounded(r.envelope.meanTtftMs + perChoice[i]! * r.envelope.msPerOutputToken, MAX_EXPECTED) : null));
  // An unmeasured route is assumed as slow as the slowest measured one: it gets traffic
  // when it is cheap, and its first requests measure it.
  const unmeasured = Math.max(0, ...measured.filter((m): m is number => m !== null));
  const latency = measured.map((m) => m ?? unmeasured);
  const cost = routes.map((r, i) => bounded(expectedCost(r, { prompt: request.promptTokens, output: outputTokens[i]! }, { prefixCache: params.prefix_cache }), MAX_EXPECTED));

  const why = routes.map((r, i) => resourceVerdict(r, request, outputTokens[i]!));
  const sloMisses = routes.map((r, i) => why[i] === null && missesSlo(r.envelope, params));
  const anyFeasible = why.some((w) => w === null);
  const sloRelaxed = anyFeasible && why.every((w, i) => w !== null || sloMisses[i]);
  if (!sloRelaxed) for (let i = 0; i < why.length; i++) if (sloMisses[i]) why[i] = "slo_miss";

  const caps = routes.map((r, i) => {
    if (why[i] !== null) return 0;
    const needed = r.quota ? unitsNeeded(r.quota, request, outputTokens[i]!) : 1;
    const cap = capOf(r, demand, needed);
    return cap > 0 ? Math.min(1, cap) : 0; // NaN too: a share nothing can justify is none
  });
  const allocation = allocate(
    routes.map((_, i) => ({ cost: cost[i]!, latencyMs: latency[i]!, cap: caps[i]! })),
    params.budget_alpha,
  );
  return {
    routes: routes.map((r, i) => ({
      id: r.id,
      feasible: why[i] === null,
      why: why[i]!,
      expectedCost: cost[i]!,
      expectedLatencyMs: latency[i]!,
      cap: caps[i]!,
      fraction: allocation.fractions[i]!,
      outputTokens: outputTokens[i]!,
    })),
    allocation,
    sloRelaxed,
  };
}

/**
 * The order to try routes in for one request: the first drawn with probability equal to
 * its fraction, the rest of the feasible routes as fallbacks, fastest expected first
 * (then cheaper, then input order). Infeasible routes never appear.
 */
export function routeOrder(decision: Decision, random: RandomSource): string[] {
  const feasible = decision.routes.filter((r) => r.feasible);
  const total = feasible.reduce((sum, r) => sum + Math.max(0, r.fraction), 0);
  let first: RouteVerdict | undefined;
  if (total > 0) {
    const point = uniformFloat(random) * total;
    let cumulative = 0;
    for (const r of feasible) {
      if (!(r.fraction > 0)) continue;
      cumulative += r.fraction;
      first = r; // float rounding can leave point at the very top: the last route with a share owns that edge
      if (point < cumulative) break;
    }
  }
  const rest = feasible.filter((r) => r !== first).sort((a, b) => a.expectedLatencyMs - b.expectedLatencyMs || a.expectedCost - b.expectedCost);
  return [...(first ? [first] : []), ...rest].map((r) => r.id);
}

/**
 * How long to wait for the chosen route's first byte before hedging to the next: `slo`
 * waits `latency_slo_ms` (null when no SLO is set); `percentile` waits the route's own
 * recent TTFT at `latency_slo_percentile` (the nearest stored percentile above it when
 * not stored; null with no recent samples, since there is nothing to judge "late" by).
 */
export function hedgeDelayMs(params: RouterParams, envelope: Envelope | null): number | null {
  switch (params.latency_hedge_mode) {
    case "off":
      return null;
    case "slo":
      return params.latency_slo_ms ?? null;
    case "percentile":
      if (!envelope || envelope.recent.samples === 0) return null;
      const delay = percentileAtOrAbove(envelope.recent.ttftMs, params.latency_slo_percentile);
      return delay !== undefined && Number.isFinite(delay) && delay >= 0 ? delay : null; // a broken number is no reason to hedge
  }
}
