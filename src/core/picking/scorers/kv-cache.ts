import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";
import { known } from "../vllm-metrics";

/**
 * KV-cache utilisation, GAIE's `kv-cache-utilization-scorer`: `1 − kvUsage`, absolute
 * (not min-max), so an empty cache scores 1 and a full one 0 whatever the others hold.
 * Input: `vllm:kv_cache_usage_perc`, a fraction in [0, 1]. Stale candidates, and those
 * whose usage is unknown (null, NaN, ±Inf), get null.
 */
export function kvCacheScores(candidates: readonly Candidate[], fresh: readonly boolean[]): (number | null)[] {
  return candidates.map((c, i) => (fresh[i] && known(c.metrics!.kvUsage) ? 1 - c.metrics!.kvUsage : null));
}

/** Reads the engines' KV-cache metric. */
export const kvCacheScorer: Scorer = { sees: "view", score: (ctx) => kvCacheScores(ctx.candidates, ctx.fresh) };
