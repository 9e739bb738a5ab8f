import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";
import { known } from "../vllm-metrics";

/**
 * Queue depth, GAIE's `queue-scorer` (queuedepth/queue.go): min-max normalised over the
 * candidates, `(maxQ − q) / (maxQ − minQ)`, so the shortest queue scores 1 and the
 * longest 0; when every queue is equal, all score 1. Input: `vllm:num_requests_waiting`.
 *
 * Only candidates with fresh metrics and a known queue are scored, and min and max are
 * taken over them alone; a stale candidate, or one whose queue is unknown (null, NaN,
 * ±Inf), gets null (the pipeline puts a stand-in in its place). One +Inf no longer
 * makes every score NaN.
 */
export function queueScores(candidates: readonly Candidate[], fresh: readonly boolean[]): (number | null)[] {
  const queue = candidates.map((c, i) => (fresh[i] && known(c.metrics!.waiting) ? c.metrics!.waiting : null));
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const q of queue) {
    if (q === null) continue;
    min = Math.min(min, q);
    max = Math.max(max, q);
  }
  return queue.map((q) => (q === null ? null : max === min ? 1 : (max - q) / (max - min)));
}

/** Reads the engines' queue metric. */
export const queueScorer: Scorer = { sees: "view", score: (ctx) => queueScores(ctx.candidates, ctx.fresh) };
