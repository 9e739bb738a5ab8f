import type { Guard } from "../plugin";
import { ascendingWithRandomTies } from "../random-ties";
import { isImbalanced } from "./balance";

/**
 * SGLang router's `cache_aware`, step 1: imbalanced when `max − min > balance_abs (64) AND
 * max > balance_rel (1.5) × min` over in-flight; then every replica by in-flight (raw
 * counts, as SGLang's worker load), random ties, prefix ignored.
 */
export const sglangBalance: Guard = {
  sees: "leases",
  check: ({ input, kept }) => {
    const s = input.settings.sglang;
    if (!isImbalanced(kept.map((c) => c.inflight), s.balanceAbs, s.balanceRel)) return null;
    return { order: ascendingWithRandomTies(kept, (c) => c.inflight, input.random), reason: "imbalanced" };
  },
};
