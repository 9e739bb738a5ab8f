import type { Priority } from "../config/schema";
import { PRIORITIES } from "../config/schema";
import type { ReplicaMetrics } from "../picking/vllm-metrics";
import { known } from "../picking/vllm-metrics";
import { isFresh } from "../picking/scoring/freshness";

/**
 * Load shedding: whether a request may go to its pool now, from its priority class and
 * the isolate's view of the replicas it could be sent to. Pure: the view is passed in.
 *
 * - max_ongoing_requests is a hard cap for every class: with every routable replica at
 *   it, nothing is admitted (critical requests then wait first in the queue, or get the
 *   429 when there is none).
 * - critical: otherwise never shed (GAIE never sheds Critical), but held to the pool's
 *   critical share (`critical_share`) so a flood of them cannot take every slot.
 * - standard: refused only when every routable replica is at max_ongoing_requests.
 * - sheddable: also refused when every routable replica is saturated: fresh metrics at
 *   or past the queue-depth or KV-cache bound, or at its in-flight cap. A replica whose
 *   metrics are stale or missing is never saturated (llm-d-router #2408: a slow scrape
 *   must not shed a healthy pool), so stale data admits.
 */
export type Refusal = "saturated" | "at_capacity" | "critical_share";
export type Admission = { admitted: true } | { admitted: false; reason: Refusal };

export interface AdmissionInput {
  priority: Priority;
  /** The replicas the request could go to (the choice's order). */
  replicas: readonly string[];
  /** Every routable replica is at max_ongoing_requests. */
  capped: boolean;
  saturated: (replica: string) => boolean;
  /** Critical requests already hold the pool's critical share (ignored for other classes). */
  criticalShareFull?: boolean;
}

export function admission(input: AdmissionInput): Admission {
  if (input.replicas.length === 0) return ADMITTED;
  if (input.capped) return { admitted: false, reason: "at_capacity" };
  if (input.priority === "critical") return input.criticalShareFull ? { admitted: false, reason: "critical_share" } : ADMITTED;
  if (input.priority === "sheddable" && input.replicas.every(input.saturated)) return { admitted: false, reason: "saturated" };
  return ADMITTED;
}

const ADMITTED: Admission = { admitted: true };

export interface SaturationBounds {
  queueDepth: number;
  kvUsage: number;
  staleMs: number;
  maxOngoing: number;
}

/** One replica's saturation, as `admission` needs it. */
export function isSaturated(metrics: ReplicaMetrics | null, load: number, now: number, bounds: SaturationBounds): boolean {
  if (bounds.maxOngoing > 0 && load >= bounds.maxOngoing) return true;
  if (!isFresh(metrics, now, bounds.staleMs)) return false;
  // An unknown queue or usage (null, NaN, ±Inf) says nothing, as stale metrics say nothing.
  return (known(metrics.waiting) && metrics.waiting >= bounds.queueDepth) || (known(metrics.kvUsage) && metrics.kvUsage >= bounds.kvUsage);
}

/**
 * The class a request runs in: the model's, or lower when the client asks
 * (`X-Switchyard-Priority`); never higher. null: the header names no class.
 */
export function requestPriority(configured: Priority, header: string | null): Priority | null {
  if (header === null) return configured;
  const index = PRIORITIES.indexOf(header.trim().toLowerCase() as Priority);
  if (index < 0) return null;
  return index < PRIORITIES.indexOf(configured) ? PRIORITIES[index]! : configured;
}

/**
 * How many critical requests one isolate may have in flight on a pool: `share` of the
 * pool's slots (max_ongoing_requests × routable replicas), rounded down, at least one.
 * No cap (max_ongoing_requests 0): no bound, as there is no slot to starve others of.
 */
export function criticalLimit(maxOngoing: number, routableReplicas: number, share: number): number {
  if (maxOngoing <= 0) return Infinity;
  return Math.max(1, Math.floor(share * maxOngoing * routableReplicas));
}
