import type { RandomSource } from "../../../lib/random";
import type { Picker } from "../plugin";
import { ascendingWithRandomTies } from "../random-ties";

/**
 * GAIE's `max-score-picker`, returning every candidate: highest total first, equal totals
 * in uniformly random order (GAIE shuffles, then stable-sorts by score). The whole list
 * is the fallback order, as GAIE's maxNumOfEndpoints > 1 yields.
 */
export function maxScoreOrder<T>(items: readonly T[], totals: readonly number[], random: RandomSource): T[] {
  const keyed = items.map((item, i) => ({ item, total: totals[i]! }));
  return ascendingWithRandomTies(keyed, (k) => -k.total, random).map((k) => k.item);
}

/** The profile's weighted totals, highest first: it reads only what its scorers scored. */
export const maxScorePicker: Picker = {
  sees: "leases",
  pick: ({ input, kept, totals }) => ({ order: maxScoreOrder(kept, totals, input.random), reason: "scored" }),
};
