import { ascendingWithRandomTies } from "../../load-policies/least-loaded";
import { uniformInt } from "../../../../lib/random";
import { isImbalanced } from "../guards/balance";
import { eligibleCandidates } from "../pipeline";
import type { Candidate, PickReason, ScoringPolicy } from "../types";
import { longestMatch, smallestTrees, thenTheRest } from "./prefix-match";
import { pickResult } from "./result";

/**
 * SGLang router's `cache_aware` policy (sgl-router/src/policies/cache_aware.rs), with the
 * launcher's defaults, in blocks instead of characters:
 * 1. Imbalanced, `max − min > balance_abs (64) AND max > balance_rel (1.5) × min` over
 *    in-flight: the least-loaded replica, prefix ignored.
 * 2. Else match_rate = longest match / request blocks. Above cache_threshold (0.3,
 *    strictly): the replica holding the longest match (SGLang takes the first tenant of
 *    the deepest node, an arbitrary one; here a uniformly random one of them).
 * 3. Else a miss: the smallest tree (fewest indexed blocks), or with onMiss "min_load" the
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
export const sglangPolicy: ScoringPolicy = (input) => {
  const eligible = eligibleCandidates(input.candidates);
  const s = input.settings.sglang;
  const byInflight = (cs: readonly Candidate[]) => ascendingWithRandomTies(cs, (c) => c.inflight, input.random);
  if (isImbalanced(eligible.map((c) => c.inflight), s.balanceAbs, s.balanceRel)) {
    return pickResult(input, byInflight(eligible), "imbalanced");
  }
  const total = input.request.hashes.length;
  const { best, holders } = longestMatch(eligible, input.index.match(input.request.hashes));
  let first: Candidate | undefined;
  let reason: PickReason;
  if (total > 0 && best / total > s.cacheThreshold) {
    first = holders[holders.length === 1 ? 0 : uniformInt(input.random, holders.length)];
    reason = "prefix";
  } else if (s.onMiss === "smallest_tree") {
    const smallest = smallestTrees(eligible, input.index);
    first = smallest[smallest.length <= 1 ? 0 : uniformInt(input.random, smallest.length)];
    reason = "smallest_tree";
  } else {
    return pickResult(input, byInflight(eligible), "cold");
  }
  return pickResult(input, first === undefined ? [] : thenTheRest([first], byInflight(eligible)), reason);
};
