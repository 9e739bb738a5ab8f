import type { Guard } from "../plugin";
import { relativeLoad } from "../scorers/inflight";
import { twoChoicesOrder } from "../scoring/two-choices";

/**
 * When no kept replica has fresh metrics, route on load counts with power of two choices:
 * picking the maximum of scores that all come from shared, delayed counts is least-loaded
 * on stale data, which herds (Mitzenmacher 2000).
 */
export const staleMetrics: Guard = {
  sees: "view",
  check: ({ input, kept, context }) => (context.fresh.some(Boolean) ? null : { order: twoChoicesOrder(kept, (c) => -relativeLoad(c), input.random), reason: "stale" }),
};
