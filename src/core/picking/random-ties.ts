import type { RandomSource } from "../../lib/random";
import { uniformInt } from "../../lib/random";

/**
 * Sorted ascending by `key`; items with equal keys are put in uniformly random order.
 * Without the shuffle, ties would always go to the same replica (the first listed in
 * config), and at low load — when every count is 0 — that one would get everything.
 * Draws are only spent on ties, so an untied order needs no randomness at all.
 */
export function ascendingWithRandomTies<T>(items: readonly T[], key: (item: T) => number, random: RandomSource): T[] {
  const keyed = items.map((item) => ({ item, key: key(item) })).sort((a, b) => a.key - b.key);
  for (let start = 0; start < keyed.length; ) {
    let end = start + 1;
    while (end < keyed.length && keyed[end]!.key === keyed[start]!.key) end++;
    // Fisher–Yates over the tied run [start, end).
    for (let i = end - 1; i > start; i--) {
      const j = start + uniformInt(random, i - start + 1);
      [keyed[i], keyed[j]] = [keyed[j]!, keyed[i]!];
    }
    start = end;
  }
  return keyed.map((entry) => entry.item);
}
