import type { RandomSource } from "../../lib/random";
import { uniformFloat, uniformInt } from "../../lib/random";

export interface Weighted {
  weight: number;
}

const MAX_EXACT_TOTAL = 2 ** 32; // uniformInt's range

/**
 * Index drawn with probability weight/total. Integer weights (60/40, 3/2) use exact
 * rejection sampling; fractional ones (seed 004's 0.3/0.2) a 53-bit uniform float.
 * Weights <= 0 are never drawn. Returns -1 when nothing can be drawn.
 */
export function pickWeightedIndex(items: readonly Weighted[], source: RandomSource): number {
  let total = 0;
  let integral = true;
  for (const item of items) {
    if (item.weight > 0) {
      total += item.weight;
      if (!Number.isInteger(item.weight)) integral = false;
    }
  }
  if (total <= 0) return -1;

  const point = integral && total <= MAX_EXACT_TOTAL ? uniformInt(source, total) : uniformFloat(source) * total;
  let last = -1;
  let cumulative = 0;
  for (let i = 0; i < items.length; i++) {
    const weight = items[i]!.weight;
    if (weight <= 0) continue;
    cumulative += weight;
    last = i;
    if (point < cumulative) return i;
  }
  return last; // float rounding can leave point == total; the last eligible item owns that edge
}

/**
 * The fallback order: a weighted draw for first place, then again among the rest, and
 * so on. The first choice follows the configured split exactly; fallbacks are spread by
 * weight too, so a failing favourite does not pile its traffic on one neighbour.
 * Weight-0 items are excluded entirely.
 */
export function weightedOrder<T extends Weighted>(items: readonly T[], source: RandomSource): T[] {
  const remaining = items.filter((item) => item.weight > 0);
  const order: T[] = [];
  while (remaining.length > 0) {
    const index = remaining.length === 1 ? 0 : pickWeightedIndex(remaining, source);
    order.push(remaining[index]!);
    remaining.splice(index, 1);
  }
  return order;
}
