import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";

export interface InflightScoreParams {
  idleThreshold: number;
  maxBusyScore: number;
}

/**
 * In-flight leases, the router's own load count, as llm-d's `active-request-scorer` with
 * PR #669's idle/busy gap: a replica with at most `idleThreshold` requests in flight
 * scores 1; a busier one `(maxLoad − load) / maxLoad · maxBusyScore`, where load is
 * in-flight per unit of weight (weight is relative capacity, as in least_loaded) and
 * maxLoad the largest among the candidates. The busiest scores 0. With maxBusyScore < 1,
 * any idle replica outscores every busy one, which spreads cold requests (PR #669: one
 * large common prefix otherwise sent everything to one pod until it queued).
 *
 * This score never goes stale: it also bounds a stale replica's metric scores
 * (scorers/totals.ts, staleStandIn).
 */
export function inflightScores(candidates: readonly Candidate[], params: InflightScoreParams): number[] {
  const loads = candidates.map(relativeLoad);
  const max = Math.max(0, ...loads);
  return candidates.map((c, i) => {
    if (c.inflight <= params.idleThreshold || max <= 0) return 1;
    return ((max - loads[i]!) / max) * params.maxBusyScore;
  });
}

/** Reads leases and weights alone. */
export const inflightScorer: Scorer = { sees: "leases", score: (ctx) => inflightScores(ctx.candidates, ctx.settings.inflight) };

/** In-flight per unit of weight; the load every policy here compares. */
export function relativeLoad(c: Candidate): number {
  return c.inflight / c.weight;
}
