import type { Picker } from "../plugin";
import { ascendingWithRandomTies } from "../random-ties";
import type { Candidate } from "../scoring/types";
import { longestMatch, smallestTrees, thenTheRest } from "./prefix-match";

/**
 * Ray Serve's PrefixCacheAffinityRouter (prefix_aware_router.py,
 * `_prefix_match_best_replicas`), in blocks instead of characters, after its balance rule
 * (guards/ray-balance.ts):
 * 1. match_rate = longest match / request blocks. Below match_rate_threshold (0.1): the
 *    candidates with the smallest trees (fewest indexed blocks); else the candidates
 *    holding the longest match.
 * 2. Among those, the one with the fewest in flight (Ray probes their queue lengths and
 *    takes the lowest); ties at random, where Ray takes the first.
 * Fallbacks: the rest of that set by in-flight, then everyone else by in-flight.
 */
export const rayPrefixPicker: Picker = {
  sees: "view",
  pick: ({ input, kept, context }) => {
    const total = input.request.hashes.length;
    const { best, holders } = longestMatch(kept, context.matches);
    const matchRate = total === 0 ? 0 : best / total;
    const miss = matchRate < input.settings.ray.matchRateThreshold || holders.length === 0;
    const chosen = miss ? smallestTrees(kept, input.index) : holders;
    const byInflight = (cs: readonly Candidate[]) => ascendingWithRandomTies(cs, (c) => c.inflight, input.random);
    return { order: thenTheRest(byInflight(chosen), byInflight(kept)), reason: miss ? "smallest_tree" : "prefix" };
  },
};
