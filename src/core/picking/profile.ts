import type { RandomSource } from "../../lib/random";
import type { FilterName } from "./filters/index";
import { applyFilters, FILTERS } from "./filters/index";
import type { GuardName } from "./guards/index";
import { GUARDS } from "./guards/index";
import type { PickerName } from "./pickers/index";
import { PICKERS } from "./pickers/index";
import type { Picked, ScoringContext, Sees, Stage } from "./plugin";
import { ascendingWithRandomTies } from "./random-ties";
import { SCORERS } from "./scorers/index";
import { relativeLoad } from "./scorers/inflight";
import { scoreTotals } from "./scorers/totals";
import { isFresh } from "./scoring/freshness";
import type { ScorerWeights, ScoringSettings } from "./scoring/settings";
import type { Candidate, PickInput, PickReason, PickResult, PickerState } from "./scoring/types";

/** The settings sections that carry scorer weights (scoring/settings.ts); a pool's `scoring.weights` overrides them. */
export type WeightsSection = { [K in keyof ScoringSettings]: ScoringSettings[K] extends { weights: ScorerWeights } ? K : never }[keyof ScoringSettings];

/**
 * A policy as data: which plugins pick, in the shape of the Gateway API Inference
 * Extension's scheduler profile (filters → scorers → picker), with guards between.
 *
 *   eligible (weight > 0) ─▶ filters ─▶ kept; the removed go last, least loaded first
 *   kept ─▶ Σ weight × clamp(score) over the scorers ─▶ totals
 *   guards in order: the first whose condition holds answers
 *   else the picker orders kept
 */
export interface Profile {
  readonly filters: readonly FilterName[];
  /** The settings section whose `weights` the totals sum (gaie: prefix 3, queue 2, kv 2 by default), or null: totals all 0. */
  readonly scorers: WeightsSection | null;
  readonly guards: readonly GuardName[];
  readonly picker: PickerName;
}

/** Weight <= 0 (or NaN) is drained: never chosen, not even as a fallback. */
export function eligibleCandidates(candidates: readonly Candidate[]): Candidate[] {
  return candidates.filter((c) => c.weight > 0);
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

/** Last-resort fallbacks: replicas a filter removed, least loaded first. */
export function byLoad(candidates: readonly Candidate[], random: RandomSource): Candidate[] {
  return ascendingWithRandomTies(candidates, relativeLoad, random);
}

/** The profile's order of the eligible candidates (each once), and why its first. */
export function profileOrder(profile: Profile, input: PickInput): Picked {
  const eligible = eligibleCandidates(input.candidates);
  if (eligible.length === 0) return { order: [], reason: "none" };
  const { kept, dropped } = applyFilters(eligible, input, profile.filters);
  const tail = byLoad(dropped, input.random);
  const context = scoringContext(kept, input, input.index.match(input.request.hashes));
  const totals = profile.scorers === null ? kept.map(() => 0) : scoreTotals(context, input.settings[profile.scorers].weights);
  const stage: Stage = { input, kept, context, totals };
  let picked: Picked | null = null;
  for (const name of profile.guards) {
    picked = GUARDS[name].check(stage);
    if (picked !== null) break;
  }
  picked ??= PICKERS[profile.picker].pick(stage);
  return tail.length === 0 ? picked : { ...picked, order: [...picked.order, ...tail] };
}

/** A pick by the profile: the order as ids, why, the prefix insert and the picker's state. */
export function runProfile(profile: Profile, input: PickInput): PickResult {
  const { order, reason, state } = profileOrder(profile, input);
  return pickResult(input, order, reason, state ?? input.state);
}

/**
 * Whether the profile reads the request: whether any of its plugins sees the view. A
 * profile with scorers counts every scorer, since a pool's `scoring.weights` may turn on
 * any of them.
 */
export function profileSees(profile: Profile): Sees {
  const plugins = [
    ...profile.filters.map((name) => FILTERS[name]),
    ...(profile.scorers === null ? [] : Object.values(SCORERS)),
    ...profile.guards.map((name) => GUARDS[name]),
    PICKERS[profile.picker],
  ];
  return plugins.some((plugin) => plugin.sees === "view") ? "view" : "leases";
}

/**
 * Every profile returns the index insert for its first choice, whatever it used to choose:
 * the chosen replica caches the prompt either way, so an index kept while one policy runs
 * stays true when another takes over.
 */
function pickResult(input: PickInput, order: readonly Candidate[], reason: PickReason, state: PickerState): PickResult {
  const first = order[0];
  if (first === undefined) return { order: [], reason: "none", insert: null, state };
  return {
    order: order.map((c) => c.id),
    reason,
    insert: input.request.hashes.length > 0 ? { replica: first.id, hashes: input.request.hashes } : null,
    state,
  };
}
