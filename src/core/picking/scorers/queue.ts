import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";

/**
 * Queue depth, GAIE's `queue-scorer` (queuedepth/queue.go): min-max normalised over the
 * candidates, `(maxQ − q) / (maxQ − minQ)`, so the shortest queue scores 1 and the
 * longest 0; when every queue is equal, all score 1. Input: `vllm:num_requests_waiting`.
 *
 * Only candidates with fresh metrics are scored, and min and max are taken over them
 * alone; a stale candidate gets null (the pipeline puts a stand-in in its place).
 */
export function queueScores(candidates: readonly Candidate[], fresh: readonly boolean[]): (number | null)[] {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  candidates.forEach((c, i) => {
    if (!fresh[i]) return;
    min = Math.min(min, c.metrics!.waiting);
    max = Math.max(max, c.metrics!.waiting);
  });
  return candidates.map((c, i) => {
    if (!fresh[i]) return null;
    return max === min ? 1 : (max - c.metrics!.waiting) / (max - min);
  });
}

/** Reads the engines' queue metric. */
export const queueScorer: Scorer = { sees: "view", score: (ctx) => queueScores(ctx.candidates, ctx.fresh) };
