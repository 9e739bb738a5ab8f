import type { Candidate } from "../scoring/types";

export interface BusyCap {
  /** Affinity holds while in-flight ≤ loadFactor × the replica's fair share. */
  loadFactor: number;
  /** ...or while in-flight ≤ floor, whatever the fair share. */
  floor: number;
}

/**
 * Guard against one hot prefix herding everything onto one replica. With prefix scores
 * alone, the replica that first served a shared system prompt matches every later request
 * and wins them all until it queues (llm-d-router PR #669: "can result in all requests
 * going to 1 Pod"; production-stack #957). Bounded-load affinity (KubeAI's CHWBL, SGLang's
 * prefix_hash) fixes this: a replica's prefix match counts only while its load is within a
 * factor of its fair share, so the overflow goes elsewhere, that replica caches the
 * prefix too, and from then on the load scorers share the prefix's traffic among all the
 * replicas that hold it.
 *
 * Precisely: with the pool's in-flight Σ (plus this request) shared by weight,
 *   fair(c) = (Σ inflight + 1) × weight(c) / Σ weight,
 * replica c keeps its affinity iff `inflight(c) ≤ max(floor, loadFactor × fair(c))`.
 * The floor matters at low load, where the fair share is a fraction of one request and
 * the rule alone would break affinity on the first concurrent request.
 *
 * Returns, per candidate in order, whether its affinity holds.
 */
export function underBusyCap(candidates: readonly Candidate[], cap: BusyCap): boolean[] {
  let inflight = 0;
  let weight = 0;
  for (const c of candidates) {
    inflight += c.inflight;
    weight += c.weight;
  }
  return candidates.map((c) => {
    const fair = ((inflight + 1) * c.weight) / weight;
    return c.inflight <= Math.max(cap.floor, cap.loadFactor * fair);
  });
}
