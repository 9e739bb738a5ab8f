import { uniformInt } from "../../../lib/random";
import type { Picked, Picker } from "../plugin";
import { ascendingWithRandomTies } from "../random-ties";
import type { Candidate } from "../scoring/types";
import { longestMatch, smallestTrees, thenTheRest } from "./prefix-match";

/**
 * SGLang router's `cache_aware` policy (sgl-router/src/policies/cache_aware.rs), with the
 * launcher's defaults, in blocks instead of characters, after its balance rule
 * (guards/sglang-balance.ts):
 * 1. match_rate = longest match / request blocks. Above cache_threshold (0.3, strictly):
 *    the replica holding the longest match (SGLang takes the first tenant of the deepest
 *    node, an arbitrary one; here a uniformly random one of them).
 * 2. Else a miss: the smallest tree (fewest indexed blocks), or with onMiss "min_load" the
 *    least-loaded replica.
 *
 * The death spiral (sglang PR #14305/#14532): a miss goes to the smallest tree whatever
 * its load. A replica busy with long unique requests has few blocks indexed (its prompts
 * are unlike anyone's and age out, or it just restarted), so every miss lands on it and
 * it gets all new traffic. Newer SMG routes misses to the least-loaded replica instead;
 * onMiss "min_load" is that fix.
 *
 * Fallbacks: everyone else by in-flight (raw counts, as SGLang's worker load), random ties.
 */
export const sglangCacheAwarePicker: Picker = {
  sees: "view",
  pick: ({ input, kept, context }): Picked => {
    const s = input.settings.sglang;
    const byInflight = (cs: readonly Candidate[]) => ascendingWithRandomTies(cs, (c) => c.inflight, input.random);
    const total = input.request.hashes.length;
    const { best, holders } = longestMatch(kept, context.matches);
    if (total > 0 && best / total > s.cacheThreshold) {
      const first = holders[holders.length === 1 ? 0 : uniformInt(input.random, holders.length)]!;
      return { order: thenTheRest([first], byInflight(kept)), reason: "prefix" };
    }
    if (s.onMiss === "smallest_tree") {
      const smallest = smallestTrees(kept, input.index);
      const first = smallest[smallest.length <= 1 ? 0 : uniformInt(input.random, smallest.length)]!;
      return { order: thenTheRest([first], byInflight(kept)), reason: "smallest_tree" };
    }
    return { order: byInflight(kept), reason: "cold" };
  },
};
