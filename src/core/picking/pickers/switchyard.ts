import type { Picked, Picker } from "../plugin";
import { SCORERS } from "../scorers/index";
import { clampScore } from "../scorers/totals";
import type { Candidate, PickInput, PickReason } from "../scoring/types";
import { twoChoicesOrder } from "../scoring/two-choices";
import { underBusyCap, withinFairShare } from "./busy-cap";
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
 * 4. Busy cap (busy-cap.ts), on the router's in-flight counts (this isolate's counted the
 *    moment it picks): a replica has room while it stays within 3× its fair share of the
 *    pool's in-flight with this request (or at most 2 in flight), and a replica already
 *    running 4 of this very prompt does not pass its fair share while a replica is at most
 *    half its own (the idle rule).
 *    While any replica has room, no pick goes to one without.
 * 5. If the longest match among those with room covers ≥ 10% of the request's blocks and
 *    at least 4 blocks: power of two choices among the replicas holding that match (Ray's
 *    "matched tenants, then the lowest queue", with two choices instead of the lowest).
 *    Fallbacks by prefix 3 + load score, so replicas that also hold the prefix come next.
 * 6. A prefix held only by replicas without room: when no replica has room, it stays home
 *    if the TTFT model predicts the soonest holder answers before the soonest cold
 *    replica; otherwise it spills.
 * 7. Else (a cold request, or a spill): two choices on the load score over the replicas
 *    with room that stay within their fair share (busy-cap.ts, withinFairShare), then
 *    over the others with room, then the rest. Cold requests spread instead of piling onto the
 *    emptiest-looking replica, which is where SGLang's smallest-tree rule spirals.
 *
 * Power of two choices among holders compares in-flight per unit of weight, the load
 * score only breaking ties: the score's queue and KV terms are scrapes up to ~0.75 s old.
 *
 * With every replica's metrics stale, step 2's score is in-flight (and locality) alone,
 * so the choice is load counts with two choices, plus prefix affinity: the prefix index
 * is the router's own record, not an engine metric, and is as fresh as its inserts.
 */
export const switchyardPicker: Picker = {
  sees: "view",
  pick: ({ input, kept, context, totals }): Picked => {
    const s = input.settings.switchyard;
    const busy = kept.map((c) => c.inflight);
    // Two choices compare requests in flight per unit of weight first (the router's own
    // count, exact for this isolate's picks), the load score only between equals. The load score's queue and KV terms come from scrapes up to
    // ~0.75 s old: in a closed loop whose requests last ~0.3 s, a replica that queued a
    // scrape ago outranked one holding more requests now, and the hot prefix piled up.
    const rank = new Map(kept.map((c, i) => [c, -busy[i]! / c.weight + LOAD_SCORE_TIE_BREAK * totals[i]!]));
    const byTwoChoices = (cs: readonly Candidate[]) => twoChoicesOrder(cs, (c) => rank.get(c)!, input.random);
    const score = new Map(kept.map((c, i) => [c, totals[i]!]));
    const byLoadScore = (cs: readonly Candidate[]) => twoChoicesOrder(cs, (c) => score.get(c)!, input.random);

    const prefixLoads = kept.map((c) => input.prefixLoad?.(c.id) ?? 0);
    const under = underBusyCap(kept, { loadFactor: s.busyLoadFactor, floor: s.busyFloor }, busy, prefixLoads);
    const room = kept.filter((_, i) => under[i]);
    // Every pick stays within the cap while any replica has room under it: a spill or a cold
    // request goes to one of those (the full ones follow as fallbacks). With no room
    // anywhere the load score alone decides.
    const full = kept.filter((_, i) => !under[i]);
    // A request with no prefix to keep goes first to the replicas within their fair share:
    // past it, it would only queue or slow the prefills already there.
    const routeByLoad = (reason: PickReason): Picked => {
      const fair = withinFairShare(kept, busy);
      const tiers = [kept.filter((_, i) => under[i] && fair[i]), kept.filter((_, i) => under[i] && !fair[i]), full].filter((t) => t.length > 0);
      return { order: tiers.flatMap(byLoadScore), reason };
    };

    const total = input.request.hashes.length;
    const affine = (best: number) => total > 0 && best >= Math.max(1, s.minMatchBlocks) && best / total >= s.matchThreshold;
    const { best, holders } = longestMatch(room, context.matches);
    if (!affine(best)) {
      const everywhere = longestMatch(kept, context.matches);
      if (!affine(everywhere.best)) return routeByLoad("cold");
      // Every holder is at its cap. Staying home anyway may still pay (queueing against a
      // cold prefill), but only when no replica has room: the cap is never passed while one does.
      const held = room.length === 0 ? soonest(everywhere.holders, input) : null;
      if (held && !soonerAway(held, kept, everywhere.holders, input)) return { order: thenTheRest([held.c], byTwoChoices(kept)), reason: "prefix_predicted" };
      return routeByLoad("prefix_capped");
    }

    // Within the cap the prefix stays home. (Letting the TTFT model spill it there to a
    // replica predicted to answer first was tried: it priced one request's prefill, not the
    // cache the spill throws away, and cost 16 points of hit rate on multi-turn sessions.)
    const home = byTwoChoices(holders)[0]!;
    const prefix = SCORERS.prefix.score(context);
    const ranked = totals.map((l, i) => l + s.prefixWeight * clampScore(prefix[i]!));
    return { order: thenTheRest([home], maxScoreOrder(kept, ranked, input.random)), reason: "prefix" };
  },
};

const LOAD_SCORE_TIE_BREAK = 1e-6; // load scores are at most ~10: this keeps them below any difference of in-flight per unit of weight

interface Predicted {
  c: Candidate;
  ms: number;
}

/** The candidate predicted to answer first, or null while the model learns (or for none). */
function soonest(cs: readonly Candidate[], input: PickInput): Predicted | null {
  const predict = input.predictTtftMs;
  if (!predict) return null;
  let best: Predicted | null = null;
  for (const c of cs) {
    const ms = predict(c.id);
    if (ms === null) return null;
    if (best === null || ms < best.ms) best = { c, ms };
  }
  return best;
}

/** The soonest of `among` that does not hold the prefix, when it is predicted to answer strictly before `home`. */
function soonerAway(home: Predicted, among: readonly Candidate[], holders: readonly Candidate[], input: PickInput): Candidate | null {
  const holding = new Set(holders);
  const away = soonest(
    among.filter((c) => !holding.has(c)),
    input,
  );
  return away !== null && away.ms < home.ms ? away.c : null;
}
