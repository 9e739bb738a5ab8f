import type { Picked, Picker } from "../plugin";
import { SCORERS } from "../scorers/index";
import { clampScore } from "../scorers/totals";
import type { Candidate, PickInput, PickReason } from "../scoring/types";
import { twoChoicesOrder } from "../scoring/two-choices";
import { underBusyCap } from "./busy-cap";
import { maxScoreOrder } from "./max-score";
import { longestMatch, thenTheRest } from "./prefix-match";

/**
 * Switchyard's default: prefix affinity where it pays, bounded so it cannot herd, and
 * power of two choices on load everywhere else. Its profile (policies.ts) does the first
 * steps:
 *
 * 1. Filters: LoRA (adapter present or loadable) and saturation (queue ≥ 5 or kv ≥ 0.8),
 *    both fail-open, neither dropping a replica for stale metrics. Removed replicas go last.
 * 2. Load score per replica (the profile's totals): in-flight 2 + queue 2 + kv-cache 2 +
 *    LoRA 1 + locality 1, a stale replica's metric scores replaced by a stand-in
 *    (scorers/totals.ts, staleStandIn).
 * 3. Balance guard (guards/balance.ts, SGLang's rule on in-flight per unit of weight,
 *    32 / 1.5): when the fleet is grossly imbalanced, two choices on the load score;
 *    prefix ignored.
 *
 * Then this picker:
 * 4. Busy cap (busy-cap.ts): only replicas within 2× their fair share of the pool's
 *    in-flight (or at most 1 in flight) may win on prefix.
 * 5. If the longest match among those covers ≥ 10% of the request's blocks and at least 4 blocks: two choices on
 *    the load score among the replicas holding that match (Ray's "matched tenants, then
 *    the lowest queue", with two choices instead of the lowest). Fallbacks by prefix 3 +
 *    load score, so replicas that also hold the prefix come next.
 * 6. A prefix held only by replicas over the busy cap stays home when the pool's learned
 *    TTFT model predicts the soonest holder answers before the soonest cold replica
 *    (queueing against prefill); without a model yet, the cap decides.
 * 7. Else (a cold request, or a spill): two choices on the load
 *    score over everyone. Cold requests spread instead of piling onto the emptiest-looking
 *    replica, which is where SGLang's smallest-tree rule spirals.
 *
 * With every replica's metrics stale, step 2's score is in-flight (and locality) alone,
 * so the choice is load counts with two choices, plus prefix affinity: the prefix index
 * is the router's own record, not an engine metric, and is as fresh as its inserts.
 */
export const switchyardPicker: Picker = {
  sees: "view",
  pick: ({ input, kept, context, totals }): Picked => {
    const s = input.settings.switchyard;
    const load = new Map(kept.map((c, i) => [c, totals[i]!]));
    const byTwoChoices = (cs: readonly Candidate[]) => twoChoicesOrder(cs, (c) => load.get(c)!, input.random);
    const routeByLoad = (reason: PickReason): Picked => ({ order: byTwoChoices(kept), reason });

    const total = input.request.hashes.length;
    const affine = (best: number) => total > 0 && best >= Math.max(1, s.minMatchBlocks) && best / total >= s.matchThreshold;
    const under = underBusyCap(kept, { loadFactor: s.busyLoadFactor, floor: s.busyFloor });
    const { best, holders } = longestMatch(kept.filter((_, i) => under[i]), context.matches);
    if (!affine(best)) {
      const everywhere = longestMatch(kept, context.matches);
      if (!affine(everywhere.best)) return routeByLoad("cold");
      const held = holderPredictedSooner(everywhere.holders, kept, input);
      if (held) return { order: thenTheRest([held], byTwoChoices(kept)), reason: "prefix_predicted" };
      return routeByLoad("prefix_capped");
    }

    const first = byTwoChoices(holders)[0]!;
    const prefix = SCORERS.prefix.score(context);
    const ranked = totals.map((l, i) => l + s.prefixWeight * clampScore(prefix[i]!));
    return { order: thenTheRest([first], maxScoreOrder(kept, ranked, input.random)), reason: "prefix" };
  },
};

/**
 * The busy cap spills a prompt off its busy home to a cold replica. With a learned TTFT
 * model it spills only when that pays: when the soonest cold replica is predicted to
 * answer before the soonest holder, queueing included. Without a model, the cap decides.
 */
function holderPredictedSooner(holders: readonly Candidate[], kept: readonly Candidate[], input: PickInput): Candidate | null {
  const predict = input.predictTtftMs;
  if (!predict) return null;
  const soonest = (cs: readonly Candidate[]) => {
    let best: { c: Candidate; ms: number } | null = null;
    for (const c of cs) {
      const ms = predict(c.id);
      if (ms === null) return null;
      if (best === null || ms < best.ms) best = { c, ms };
    }
    return best;
  };
  const holding = new Set(holders);
  const home = soonest(holders);
  const away = soonest(kept.filter((c) => !holding.has(c)));
  if (home === null) return null;
  return away === null || home.ms <= away.ms ? home.c : null;
}
