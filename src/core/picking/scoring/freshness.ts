import type { ReplicaMetrics } from "../vllm-metrics";
import type { Candidate } from "./types";

/**
 * Whether a replica's metrics may be routed on: present, and sampled at most
 * `stalenessMs` before `now`. A sample stamped in the future (clock skew between the
 * scraper and this router) counts as fresh: it is at least as new as anything else.
 *
 * A stale replica is not a bad replica. Stale or missing metrics never mark a replica
 * saturated, never drop it from a filter by themselves, and their scores are replaced
 * by a stand-in no better than the fresh replicas' mean (scorers/totals.ts). llm-d-router
 * #2408 scored stale endpoints as saturated, and one slow scrape took a pool down.
 */
export function isFresh(metrics: ReplicaMetrics | null, now: number, stalenessMs: number): metrics is ReplicaMetrics {
  return metrics !== null && Number.isFinite(metrics.sampledAt) && now - metrics.sampledAt <= stalenessMs;
}

/** `isFresh` for each candidate, in order. */
export function freshness(candidates: readonly Candidate[], now: number, stalenessMs: number): boolean[] {
  return candidates.map((c) => isFresh(c.metrics, now, stalenessMs));
}
