import type { Filter } from "../plugin";
import type { Candidate } from "../scoring/types";
import { known } from "../vllm-metrics";

export interface SaturationThresholds {
  queueDepth: number;
  kvUsage: number;
}

/**
 * Saturation filter, GAIE's utilization detector used as a filter: drop a replica whose
 * fresh metrics show `waiting ≥ queueDepth` (5) or `kvUsage ≥ kvUsage` (0.8): sending it
 * more work queues it or makes it preempt.
 *
 * Two differences from GAIE, both from llm-d-router #2408's outage:
 * - Stale or missing metrics never mark a replica saturated by themselves (GAIE scored
 *   them 1.0, saturated; a single-replica pool then looked saturated and stalled).
 * - Fail-open: when every replica would be dropped, keep them all (GAIE's filter does the
 *   same). Shedding load is admission's job, not the picker's.
 */
export function saturationFilter(candidates: readonly Candidate[], isFresh: (c: Candidate) => boolean, thresholds: SaturationThresholds): Candidate[] {
  const kept = candidates.filter((c) => !(isFresh(c) && isSaturated(c, thresholds)));
  return kept.length > 0 ? kept : [...candidates];
}

/** Reads the engines' queue and KV metrics, with the pool's `scoring.saturation` bounds. */
export const saturation: Filter = { sees: "view", keep: (candidates, isFresh, input) => saturationFilter(candidates, isFresh, input.settings.saturation) };

/** An unknown queue or usage (null, NaN, ±Inf) says nothing: never saturated by it. */
function isSaturated(c: Candidate, t: SaturationThresholds): boolean {
  const { waiting, kvUsage } = c.metrics!;
  return (known(waiting) && waiting >= t.queueDepth) || (known(kvUsage) && kvUsage >= t.kvUsage);
}
