import type { PlannedTry } from "./plan";

/** A plan's tries as a fixed list, tried in order (a target listed twice is tried twice). */
export function fixedTries(tries: readonly PlannedTry[]): { next(): PlannedTry | null; hasMore(): boolean } {
  let i = 0;
  return {
    next: () => tries[i++] ?? null,
    hasMore: () => i < tries.length,
  };
}
