import { ascendingWithRandomTies } from "../random-ties";
import type { RandomSource } from "../../../lib/random";
import { uniformInt } from "../../../lib/random";

/**
 * Power of two choices by a score (higher is better): draw two distinct items uniformly
 * and put the better first (a tie keeps the first drawn). Then every other item, best
 * first with random ties, as fallbacks: after the choice fails, the best of the rest is
 * a better next try than the random loser of the draw.
 *
 * Why two choices and not the best score: many isolates route on load counts up to half a
 * second old, and all of them sending to the apparently least-loaded replica is herding;
 * the best of two random replicas stays good over a wide range of staleness (Mitzenmacher,
 * "How useful is old information?", 2000) while removing most of random's imbalance.
 */
export function twoChoicesOrder<T>(items: readonly T[], score: (item: T) => number, random: RandomSource): T[] {
  const n = items.length;
  if (n <= 1) return [...items];
  const i = uniformInt(random, n);
  let j = uniformInt(random, n - 1);
  if (j >= i) j++; // two distinct indices, every pair equally likely
  const winner = score(items[j]!) > score(items[i]!) ? j : i;
  const rest = items.filter((_, k) => k !== winner);
  return [items[winner]!, ...ascendingWithRandomTies(rest, (item) => -score(item), random)];
}
