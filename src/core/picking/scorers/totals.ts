import type { ScoringContext } from "../plugin";
import type { ScorerName, ScorerWeights } from "../scoring/settings";
import { SCORERS } from "./index";

/** A scorer's output as the sum counts it: null (no fresh metrics) and NaN count 0, the rest is clamped to [0, 1] as GAIE does. */
export function clampScore(score: number | null): number {
  if (score === null || Number.isNaN(score)) return 0;
  return Math.min(1, Math.max(0, score));
}

export interface WeightedScores {
  weight: number;
  scores: readonly (number | null)[];
}

/**
 * GAIE's weighted scorer (scheduler_profile.go): `total[i] = Σ weight × clamp(score[i])`.
 * Weights are not normalised, so prefix 3 + queue 2 + kv 2 ranges over [0, 7].
 */
export function weightedTotals(parts: readonly WeightedScores[], count: number): number[] {
  const totals = new Array<number>(count).fill(0);
  for (const part of parts) {
    if (part.weight === 0) continue;
    for (let i = 0; i < count; i++) totals[i]! += part.weight * clampScore(part.scores[i] ?? null);
  }
  return totals;
}

/**
 * Weighted totals per candidate, each null (stale) metric score replaced by `staleStandIn`.
 *
 * Staleness, one rule: a scorer that reads engine metrics (queue, kv-cache, LoRA) gives
 * null for a replica whose metrics are stale or missing, and in its place goes the lower
 * of the replica's in-flight score and the fresh replicas' mean score. So a stale replica
 * is never favoured by an old empty queue nor by its staleness (it never outscores the
 * average fresh replica), is never shunned by an old full queue, and is still ranked down
 * by what the router itself knows: its leases.
 */
export function scoreTotals(ctx: ScoringContext, weights: ScorerWeights): number[] {
  const inflight = SCORERS.inflight.score(ctx) as number[];
  const parts = (Object.entries(weights) as [ScorerName, number][])
    .filter(([, weight]) => weight !== 0)
    .map(([name, weight]) => ({ weight, scores: name === "inflight" ? inflight : staleStandIn(SCORERS[name].score(ctx), inflight) }));
  return weightedTotals(parts, ctx.candidates.length);
}

/**
 * A metric scorer's scores with each null (stale) replaced by min(in-flight score, mean of
 * the fresh scores): no better than the average fresh replica, lower if its leases say it
 * is busy. With no fresh score at all, the in-flight score alone.
 */
export function staleStandIn(scores: readonly (number | null)[], inflight: readonly number[]): number[] {
  const fresh = scores.filter((s): s is number => s !== null).map((s) => clampScore(s));
  const ceiling = fresh.length === 0 ? 1 : fresh.reduce((a, b) => a + b, 0) / fresh.length;
  return scores.map((s, i) => s ?? Math.min(inflight[i]!, ceiling));
}
