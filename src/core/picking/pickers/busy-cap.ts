import type { Candidate } from "../scoring/types";

export interface BusyCap {
  /** A replica may hold up to loadFactor × its fair share of the pool's in-flight, this request included... */
  loadFactor: number;
  /** ...or, whatever the fair share, this many in flight before this request (this many + 1 with it). */
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
 * Precisely: with the pool's load Σ (plus this request) shared by weight,
 *   fair(c) = (Σ load + 1) × weight(c) / Σ weight,
 *   cap(c)  = max(floor + 1, loadFactor × fair(c)),
 * replica c may take this request iff `load(c) + 1 ≤ cap(c)`: the cap bounds the load
 * *with* the request, so a replica at its cap is never pushed past it. The floor matters
 * at low load, where the fair share is a fraction of one request and the rule alone would
 * break affinity on the first concurrent request.
 *
 * The load is the router's count (Candidate.inflight): this isolate's own requests, counted
 * the moment it picks, plus the other isolates' as the pool's view last reported them.
 * The engines' scraped running + waiting is not added in: in a burst it is up to ~0.75 s
 * behind (scrape, then view), and taking the larger of the two starved the replica that
 * had just drained, whose last sample still showed it full.
 */
export function busyCaps(loads: readonly number[], candidates: readonly Candidate[], cap: BusyCap): number[] {
  return fairShares(loads, candidates).map((fair) => capFor(fair, cap));
}

const capFor = (fair: number, cap: BusyCap): number => Math.max(cap.floor + 1, cap.loadFactor * fair);

const UNDERUSED_SHARE = 0.5; // at most half its fair share: not just a replica between two requests, yet not only an empty one (one stray request from elsewhere must not hide it)
export const HOT_PREFIX_REQUESTS = 4; // a prompt with this many requests on one replica is outgrowing it; at 3 a shared tenant's short spikes spilled too (80-82% hit rate on shared against 83% at 4), the burst spreads either way

/**
 * Per candidate, in order: whether it may take one more request. Within the floor, yes;
 * past it, only within its cap; and a replica already carrying HOT_PREFIX_REQUESTS of
 * this very prompt (`prefixLoads`, this isolate's count) may not go past its fair share
 * while a replica is underused (at most half its own fair share).
 *
 * The idle rule is what spreads a burst. A cap of loadFactor × fair share lets N /
 * loadFactor replicas carry everything: with k replicas holding a prefix, the holders keep
 * it once k > N / loadFactor, so on 4 replicas at loadFactor 2, three holders took a hot
 * prompt's whole burst while the fourth, never having seen the prompt, sat idle and the
 * three queued. A lower factor would spread it too, but spills every busy tenant's
 * prompts as well (measured: 1.25 cost 11 points of hit rate on twelve tenants); this
 * rule fires only for a prompt that itself fills its home, and only toward a replica
 * with room to spare.
 */
export function underBusyCap(candidates: readonly Candidate[], cap: BusyCap, loads: readonly number[] = candidates.map((c) => c.inflight), prefixLoads: readonly number[] = []): boolean[] {
  const fair = fairShares(loads, candidates);
  const idle = loads.some((l, i) => candidates[i]!.weight > 0 && l <= fair[i]! * UNDERUSED_SHARE);
  return candidates.map((_, i) => {
    const after = loads[i]! + 1;
    if (after <= cap.floor + 1) return true;
    if (after > capFor(fair[i]!, cap)) return false;
    const hot = (prefixLoads[i] ?? 0) >= HOT_PREFIX_REQUESTS;
    return !(hot && idle && after > Math.ceil(fair[i]!));
  });
}

/**
 * Per candidate, in order: whether it stays within its fair share (rounded up) with one
 * more request: `load(c) + 1 ≤ ⌈fair(c)⌉`. For a request with no prefix to keep (cold, or
 * spilled), going past its fair share buys nothing. With equal weights the least loaded
 * replica always passes, so among those that pass, two choices spread a cohort of cold
 * requests evenly. Two choices over everyone put four or more of twelve simultaneous cold
 * requests on one of four replicas in 63% of cohorts (simulated, nothing finishing), and
 * that replica's prefills, which share its compute, all ran a third slower.
 */
export function withinFairShare(candidates: readonly Candidate[], loads: readonly number[] = candidates.map((c) => c.inflight)): boolean[] {
  const fair = fairShares(loads, candidates);
  return candidates.map((c, i) => c.weight > 0 && loads[i]! + 1 <= Math.ceil(fair[i]!));
}

/** fair(c) = (Σ load + 1) × weight(c) / Σ weight: the pool's load with this request, shared by weight. */
function fairShares(loads: readonly number[], candidates: readonly Candidate[]): number[] {
  let total = 0;
  let weight = 0;
  candidates.forEach((c, i) => {
    total += loads[i]!;
    weight += c.weight;
  });
  return candidates.map((c) => ((total + 1) * c.weight) / weight);
}

