import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";

export interface PrefixScoreParams {
  matchLengthWeight: number;
  matchLengthScaleBlocks: number;
}

/**
 * Prefix match, GAIE's `prefix-cache-scorer` (prefix/plugin.go): `matched / total`, the
 * fraction of the request's blocks the replica holds as a leading run (PrefixIndex.match);
 * 0 when the request has no blocks.
 *
 * With `matchLengthWeight` w > 0, llm-d-router's variant: `w · min(1, matched / scale)² +
 * (1 − w) · matched / total`, which also rewards a long absolute match (a 90% match of a
 * 200-token prompt saves less than a 50% match of a 20,000-token one).
 */
export function prefixScores(
  candidates: readonly Candidate[],
  matches: ReadonlyMap<string, number>,
  totalBlocks: number,
  params: PrefixScoreParams,
): number[] {
  const w = params.matchLengthWeight;
  return candidates.map((c) => {
    if (totalBlocks <= 0) return 0;
    const matched = matches.get(c.id) ?? 0;
    const ratio = matched / totalBlocks;
    if (w <= 0) return ratio;
    const length = Math.min(1, matched / params.matchLengthScaleBlocks);
    return w * length * length + (1 - w) * ratio;
  });
}

/** Reads the prompt's blocks against the prefix index, with the pool's `settings.prefix`. */
export const prefixScorer: Scorer = { sees: "view", score: (ctx) => prefixScores(ctx.candidates, ctx.matches, ctx.request.hashes.length, ctx.settings.prefix) };
