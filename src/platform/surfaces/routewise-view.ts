import type { Env } from "../env";
import type { ConfigSnapshot } from "../config-source";
import { percentileKey } from "../../core/routewise/percentiles";
import type { Envelope, QuotaView } from "../../core/routewise/types";
import type { CircuitState } from "../../core/health/circuit";
import { clock } from "../../lib/clock";
import type { IsolateState } from "../../app/state/isolate-state";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { envelopeRpc, quotaRpc, slotsRpc } from "../../app/state/routewise/stubs";
import type { EnvelopeSnapshot, QuotaState } from "../../core/routewise/wire";
import type { RouteViews } from "../../app/state/routewise/views";
import { decideNow, missingCalibration } from "../../app/state/routewise/views";
import { routeAvailable } from "../../core/routewise/route-circuits";

const round = (x: number, digits = 3) => Number(x.toFixed(digits));
const costDigits = 9; // prices are per token: a request's cost is a few millionths of a currency unit

/** What the RouteWise objects hold for one model, read for /routing and /metrics (null where one could not be reached). */
export interface RouteWiseLive {
  envelope: EnvelopeSnapshot | null;
  quotas: Map<string, QuotaState | null>;
  slots: Map<string, { granted: number; isolates: number } | null>;
}

export async function routewiseLive(env: Env, spec: RouteWiseSpec): Promise<RouteWiseLive> {
  const quotaIds = [...new Set([...spec.quotas.values()].map((q) => q.id))];
  const slotIds = [...new Set([...spec.slots.values()].map((s) => s.id))];
  const [envelope, quotas, slots] = await Promise.all([
    envelopeRpc(env, spec.model).snapshot().catch(() => null),
    Promise.all(quotaIds.map(async (id) => [id, await quotaRpc(env, id).snapshot().catch(() => null)] as const)),
    Promise.all(slotIds.map(async (id) => [id, await slotsRpc(env, id).snapshot().catch(() => null)] as const)),
  ]);
  return { envelope, quotas: new Map(quotas), slots: new Map(slots) };
}

/**
 * A RouteWise model in `GET /routing`: per route the fraction of traffic and expected
 * cost the decision gives a typical request now (the mean prompt and output of the
 * envelope), what quota and slots remain, and the envelope's percentiles. Read from the
 * objects themselves, so it is the fleet's state, not one isolate's.
 */
export function routewiseModelView(snapshot: ConfigSnapshot, spec: RouteWiseSpec, live: RouteWiseLive, isolate: IsolateState) {
  const shown = snapshot.redactions;
  const now = clock.now();
  const envelope = (route: string): Envelope | null => live.envelope?.envelopes[route] ?? null;
  const quotaView = (route: string): QuotaView | undefined => {
    const q = spec.quotas.get(route);
    if (!q) return undefined;
    const s = live.quotas.get(q.id);
    if (!s) return { remaining: 0, limit: q.limit, unit: q.unit, resetInMs: null, failSafe: "source_unreachable" };
    return { remaining: s.remaining, limit: s.limit, unit: s.unit, resetInMs: s.resetAt === null ? null : Math.max(0, s.resetAt - now), failSafe: s.failSafe };
  };
  const slotsOf = (route: string) => {
    const s = spec.slots.get(route);
    if (!s) return undefined;
    const granted = live.slots.get(s.id)?.granted ?? 0;
    return { free: Math.max(0, s.limit - granted), limit: s.limit };
  };
  const agent = isolate.routewiseAgents.models.get(spec.model);
  // The routes' circuits are the fleet's, in the envelope object; this isolate's view stands in when it cannot be read.
  const healthy = (route: string, at: number) => (live.envelope ? routeAvailable(live.envelope.circuits[route], at) : (agent?.healthy(route, at) ?? true));
  const views: RouteViews = {
    envelope,
    quota: quotaView,
    slots: slotsOf,
    healthy,
    demand: live.envelope?.demand ?? { requestsPerS: 0 },
  };
  const measured = spec.routes.map((r) => envelope(r.id)).filter((e): e is Envelope => e !== null);
  const typicalPrompt = measured.length > 0 ? Math.round(measured.reduce((s, e) => s + e.meanPromptTokens, 0) / measured.length) : 0;
  const decision = decideNow(spec, views, { promptTokens: typicalPrompt, maxTokens: null });
  const missing = spec.quotaBearing ? missingCalibration(spec, { envelope }) : [];
  return {
    router: "routewise",
    params: spec.params,
    state: live.envelope ? "ok" : "unreachable",
    calibrated: missing.length === 0,
    uncalibrated_routes: missing,
    demand_rps: round(views.demand.requestsPerS),
    typical_request: { prompt_tokens: typicalPrompt },
    budget: {
      cheapest: round(decision.allocation.cheapest, costDigits),
      dearest: round(decision.allocation.dearest, costDigits),
      limit: round(decision.allocation.budget, costDigits),
      met: decision.allocation.budgetMet,
      expected_cost: round(decision.allocation.expectedCost, costDigits),
      expected_latency_ms: round(decision.allocation.expectedLatencyMs, 1),
    },
    slo_relaxed: decision.sloRelaxed,
    routes: spec.routes.map((r, i) => {
      const verdict = decision.routes[i]!;
      const e = envelope(r.id);
      const q = spec.quotas.get(r.id);
      const qs = q ? live.quotas.get(q.id) : undefined;
      const s = spec.slots.get(r.id);
      return {
        id: shown.text(r.id),
        url: shown.url(r.url),
        upstream_model: r.upstream_model !== undefined ? shown.text(r.upstream_model) : null,
        provider_type: r.provider_type,
        api_key: r.api_key ? "(set)" : null,
        pricing: r.pricing ?? null,
        fraction: round(verdict.fraction, 6),
        feasible: verdict.feasible,
        why_not: verdict.why,
        expected_cost: round(verdict.expectedCost, costDigits),
        expected_latency_ms: round(verdict.expectedLatencyMs, 1),
        predicted_output_tokens: verdict.outputTokens,
        cooling_down: !healthy(r.id, now),
        circuit: circuitView(live.envelope?.circuits[r.id] ?? agent?.circuit(r.id)),
        quota: q
          ? {
              pool: shown.text(q.id),
              remaining: qs?.remaining ?? null,
              limit: qs?.limit ?? q.limit,
              unit: q.unit,
              reset_at: isoTime(qs?.resetAt),
              // Why the quota counts as exhausted although its source may say otherwise: never polled, or unreachable too long.
              fail_safe: qs ? qs.failSafe : "object_unreachable",
              polled_at: isoTime(qs?.polledAt),
              last_error: qs?.lastError ?? null,
              usage_api: shown.url(q.source.url),
              // Units this isolate's requests in flight hold until their real use is known.
              reserved_here: isolate.routewiseAgents.quotas.get(q.id)?.reserved ?? 0,
            }
          : null,
        concurrency: s
          ? { pool: shown.text(s.id), limit: s.limit, granted: live.slots.get(s.id)?.granted ?? null, in_use_here: isolate.routewiseAgents.slots.get(s.id)?.inUse ?? 0 }
          : null,
        envelope: e ? envelopeView(e, spec.params.latency_slo_percentile) : null,
      };
    }),
  };
}

/** An epoch-ms time as ISO text; null when absent or not a time a Date can hold (shown as unknown, never a 500). */
function isoTime(ms: number | null | undefined): string | null {
  if (!ms) return null;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function circuitView(c: CircuitState | undefined) {
  return { state: c?.phase ?? "closed", reopen_at: isoTime(c?.reopenAt), trips: c?.trips ?? 0 };
}

function envelopeView(e: Envelope, sloPercentile: number) {
  const map = (p: Record<string, number>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, round(v, 1)]));
  return {
    samples: e.samples,
    ttft_ms: map(e.ttftMs),
    total_ms: map(e.totalMs),
    output_tokens: map(e.outputTokens),
    mean_prompt_tokens: round(e.meanPromptTokens, 1),
    ms_per_output_token: round(e.msPerOutputToken),
    cached_ratio: round(e.cachedRatio),
    recent: { samples: e.recent.samples, ttft_ms: map(e.recent.ttftMs), slo_percentile: percentileKey(sloPercentile) },
  };
}
