import { ascendingWithRandomTies } from "../load-policies/least-loaded";
import type { RandomSource } from "../../../lib/random";
import { loraFilter } from "./filters/lora";
import { saturationFilter } from "./filters/saturation";
import { isFresh } from "./freshness";
import { clampScore, maxScoreOrder, weightedTotals } from "./picker";
import { relativeLoad } from "./scorers/inflight";
import type { ScoringContext } from "./scorers/index";
import { SCORERS } from "./scorers/index";
import type { ScorerName, ScorerWeights } from "./settings";
import type { Candidate, PickInput, PickReason } from "./types";
import { twoChoicesOrder } from "./two-choices";

/**
 * The scoring pipeline, GAIE's scheduler profile: filters → scorers → picker.
 *
 *   eligible (weight > 0) ─▶ LoRA filter ─▶ saturation filter ─▶ survivors
 *   survivors ─▶ Σ weight × clamp(score) ─▶ max score, random ties ─▶ order
 *   filtered-out replicas ─▶ appended by load (last-resort fallbacks, never first)
 *
 * Staleness, one rule: a scorer that reads engine metrics (queue, kv-cache, LoRA) gives
 * null for a replica whose metrics are stale or missing, and the pipeline puts in its
 * place the lower of the replica's in-flight score and the fresh replicas' mean score
 * (`staleStandIn`). So a stale replica is never favoured by an old empty queue nor by
 * its staleness (it never outscores the average fresh replica), is never shunned by an
 * old full queue, and is still ranked down by what the router itself knows: its leases.
 * When *no* survivor has fresh metrics, the pipeline routes on load counts with power of
 * two choices: picking the maximum of scores that all come from shared, delayed counts is
 * least-loaded on stale data, which herds (Mitzenmacher 2000).
 */

export interface FilterChoice {
  lora: boolean;
  saturation: boolean;
}

export const NO_FILTERS: FilterChoice = { lora: false, saturation: false };
export const ALL_FILTERS: FilterChoice = { lora: true, saturation: true };

/** Weight <= 0 (or NaN) is drained: never chosen, not even as a fallback. */
export function eligibleCandidates(candidates: readonly Candidate[]): Candidate[] {
  return candidates.filter((c) => c.weight > 0);
}

export interface Filtered {
  kept: Candidate[];
  /** Eligible replicas the filters removed, in input order. */
  dropped: Candidate[];
}

export function applyFilters(eligible: readonly Candidate[], input: PickInput, choice: FilterChoice): Filtered {
  const fresh = (c: Candidate) => isFresh(c.metrics, input.now, input.settings.stalenessMs);
  let kept: Candidate[] = [...eligible];
  if (choice.lora) kept = loraFilter(kept, fresh, input.request.adapter);
  if (choice.saturation) kept = saturationFilter(kept, fresh, input.settings.saturation);
  const survivors = new Set(kept);
  return { kept, dropped: eligible.filter((c) => !survivors.has(c)) };
}

export function scoringContext(candidates: readonly Candidate[], input: PickInput, matches: ReadonlyMap<string, number>): ScoringContext {
  return {
    candidates,
    fresh: candidates.map((c) => isFresh(c.metrics, input.now, input.settings.stalenessMs)),
    request: input.request,
    matches,
    settings: input.settings,
  };
}

/** Weighted totals per candidate, each null (stale) metric score replaced by `staleStandIn`. */
export function scoreTotals(ctx: ScoringContext, weights: ScorerWeights): number[] {
  const inflight = SCORERS.inflight(ctx) as number[];
  const parts = (Object.entries(weights) as [ScorerName, number][])
    .filter(([, weight]) => weight !== 0)
    .map(([name, weight]) => ({ weight, scores: name === "inflight" ? inflight : staleStandIn(SCORERS[name](ctx), inflight) }));
  return weightedTotals(parts, ctx.candidates.length);
}

/**
 * A metric scorer's scores with each null (stale) replaced by min(in-flight score, mean of
 * the fresh scores): no better than the average fresh replica, lower if its leases say it
 * is busy. With no fresh score at all, the in-flight score alone.
 */
export function staleStandIn(scores: readonly (number | null)[], inflight: readonly number[]): number[] {
  const fresh = scores.filter((s): s is number => s !== null).map((s) => clampScore(s));
  const ceiling = fresh.length === 0 ? 1 : fresh.reduce((a, b) => a + b, 0) / fresh.length;
  return scores.map((s, i) => s ?? Math.min(inflight[i]!, ceiling));
}

/** Last-resort fallbacks: replicas a filter removed, least loaded first. */
export function byLoad(candidates: readonly Candidate[], random: RandomSource): Candidate[] {
  return ascendingWithRandomTies(candidates, relativeLoad, random);
}

export interface PipelineResult {
  order: Candidate[];
  reason: Extract<PickReason, "none" | "scored" | "stale">;
}

/** The whole pipeline for one weighted profile (the GAIE reference policy is exactly this). */
export function runPipeline(input: PickInput, weights: ScorerWeights, filters: FilterChoice): PipelineResult {
  const eligible = eligibleCandidates(input.candidates);
  if (eligible.length === 0) return { order: [], reason: "none" };
  const { kept, dropped } = applyFilters(eligible, input, filters);
  const tail = byLoad(dropped, input.random);
  const ctx = scoringContext(kept, input, input.index.match(input.request.hashes));
  if (!ctx.fresh.some(Boolean)) {
    return { order: [...twoChoicesOrder(kept, (c) => -relativeLoad(c), input.random), ...tail], reason: "stale" };
  }
  const totals = scoreTotals(ctx, weights);
  return { order: [...maxScoreOrder(kept, totals, input.random), ...tail], reason: "scored" };
}
