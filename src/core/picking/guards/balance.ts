import type { Guard } from "../plugin";
import { relativeLoad } from "../scorers/inflight";
import { twoChoicesOrder } from "../scoring/two-choices";

/**
 * Balance guard: is the fleet's load so uneven that the next request should go by load,
 * whatever its prefix? SGLang's cache_aware rule: `max − min > abs AND max > rel × min`.
 * Ray's PrefixCacheAffinityRouter is the same with only the absolute part (`max − min >
 * imbalanced_threshold`), i.e. rel = 1, which `max − min > abs ≥ 0` already implies.
 *
 * The relative part keeps the guard quiet in a busy fleet (60 vs 130 in flight is
 * "imbalanced" by 64 but only 2.2×); the absolute part keeps it quiet at low load (0 vs 3
 * is infinitely relative but means nothing). An empty or single-replica fleet is balanced.
 */
export function isImbalanced(loads: readonly number[], abs: number, rel: number): boolean {
  if (loads.length < 2) return false;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const load of loads) {
    min = Math.min(min, load);
    max = Math.max(max, load);
  }
  return max - min > abs && max > rel * min;
}

/**
 * Switchyard's balance guard (the pool's `scoring.balance`, 32 / 1.5 by default): SGLang's
 * rule on in-flight per unit of weight. When the fleet is grossly imbalanced, two choices
 * on the load score (the profile's totals), prefix ignored. The busy cap
 * (pickers/busy-cap.ts) handles one replica's overload; this is only for gross imbalance.
 */
export const balance: Guard = {
  sees: "leases",
  check: ({ input, kept, totals }) => {
    const s = input.settings.switchyard;
    if (!isImbalanced(kept.map(relativeLoad), s.balanceAbs, s.balanceRel)) return null;
    const load = new Map(kept.map((c, i) => [c, totals[i]!]));
    return { order: twoChoicesOrder(kept, (c) => load.get(c)!, input.random), reason: "imbalanced" };
  },
};
