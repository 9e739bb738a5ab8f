import { ascendingWithRandomTies } from "../load-policies/least-loaded";
import type { RandomSource } from "../../../lib/random";

/** A scorer's output as the picker sums it: null (no fresh metrics) and NaN count 0, the rest is clamped to [0, 1] as GAIE does. */
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
 * GAIE's `max-score-picker`, returning every candidate: highest total first, equal totals
 * in uniformly random order (GAIE shuffles, then stable-sorts by score). The whole list
 * is the fallback order, as GAIE's maxNumOfEndpoints > 1 yields.
 */
export function maxScoreOrder<T>(items: readonly T[], totals: readonly number[], random: RandomSource): T[] {
  const keyed = items.map((item, i) => ({ item, total: totals[i]! }));
  return ascendingWithRandomTies(keyed, (k) => -k.total, random).map((k) => k.item);
}
