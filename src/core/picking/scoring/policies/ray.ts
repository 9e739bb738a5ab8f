import { ascendingWithRandomTies } from "../../load-policies/least-loaded";
import { powerOfTwo } from "../../load-policies/power-of-two";
import { isImbalanced } from "../guards/balance";
import { eligibleCandidates } from "../pipeline";
import type { Candidate, ScoringPolicy } from "../types";
import { longestMatch, smallestTrees, thenTheRest } from "./prefix-match";
import { pickResult } from "./result";

/**
 * Ray Serve's PrefixCacheAffinityRouter (prefix_aware_router.py,
 * `_prefix_match_best_replicas`), in blocks instead of characters:
 * 1. Imbalanced, `max − min` in-flight > imbalanced_threshold (10): the power-of-two
 *    choice, prefix ignored.
 * 2. Else match_rate = longest match / request blocks. Below match_rate_threshold (0.1):
 *    the candidates with the smallest trees (fewest indexed blocks); else the candidates
 *    holding the longest match.
 * 3. Among those, the one with the fewest in flight (Ray probes their queue lengths and
 *    takes the lowest); ties at random, where Ray takes the first.
 * Fallbacks: the rest of that set by in-flight, then everyone else by in-flight.
 */
export const rayPolicy: ScoringPolicy = (input) => {
  const eligible = eligibleCandidates(input.candidates);
  const { imbalancedThreshold, matchRateThreshold } = input.settings.ray;
  if (isImbalanced(eligible.map((c) => c.inflight), imbalancedThreshold, 1)) {
    return pickResult(input, powerOfTwo(eligible, input.random) as Candidate[], "imbalanced");
  }
  const total = input.request.hashes.length;
  const { best, holders } = longestMatch(eligible, input.index.match(input.request.hashes));
  const matchRate = total === 0 ? 0 : best / total;
  const miss = matchRate < matchRateThreshold || holders.length === 0;
  const chosen = miss ? smallestTrees(eligible, input.index) : holders;
  const byInflight = (cs: readonly Candidate[]) => ascendingWithRandomTies(cs, (c) => c.inflight, input.random);
  return pickResult(input, thenTheRest(byInflight(chosen), byInflight(eligible)), miss ? "smallest_tree" : "prefix");
};
