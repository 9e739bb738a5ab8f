import type { ScorerName, ScoringSettings } from "../settings";
import type { Candidate, RequestFeatures } from "../types";
import { inflightScores } from "./inflight";
import { kvCacheScores } from "./kv-cache";
import { localityScores } from "./locality";
import { loraScores } from "./lora";
import { prefixScores } from "./prefix";
import { queueScores } from "./queue";

/** Everything a scorer may read, computed once per pick. */
export interface ScoringContext {
  candidates: readonly Candidate[];
  /** Per candidate: are its metrics fresh (freshness.ts)? */
  fresh: readonly boolean[];
  request: RequestFeatures;
  /** PrefixIndex.match of the request's hashes. */
  matches: ReadonlyMap<string, number>;
  settings: ScoringSettings;
}

/**
 * One score per candidate, in order: a number meant to lie in [0, 1] (the picker clamps),
 * or null where the scorer needs metrics the candidate does not have fresh.
 */
export type Scorer = (ctx: ScoringContext) => (number | null)[];

export const SCORERS: Readonly<Record<ScorerName, Scorer>> = {
  prefix: (ctx) => prefixScores(ctx.candidates, ctx.matches, ctx.request.hashes.length, ctx.settings.prefix),
  queue: (ctx) => queueScores(ctx.candidates, ctx.fresh),
  kvCache: (ctx) => kvCacheScores(ctx.candidates, ctx.fresh),
  inflight: (ctx) => inflightScores(ctx.candidates, ctx.settings.inflight),
  lora: (ctx) => loraScores(ctx.candidates, ctx.fresh, ctx.request.adapter),
  locality: (ctx) => localityScores(ctx.candidates, ctx.request.locality),
};
