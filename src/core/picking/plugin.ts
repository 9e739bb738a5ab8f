/**
 * The four kinds of plugin a policy profile is made of (profile.ts): filters, scorers,
 * guards and a picker. Each is a pure function of the pick plus what it reads, declared
 * so that whether a pool reads its requests follows from its plugins (policies.ts).
 */
import type { ScoringSettings } from "./scoring/settings";
import type { Candidate, PickInput, PickReason, PickerState, RequestFeatures } from "./scoring/types";

/**
 * What a plugin reads of a pick:
 * - "leases": the replicas' weights and in-flight counts, which every pick has;
 * - "view": the isolate's view built for the request as well: the prompt's blocks and the
 *   prefix index, the LoRA adapter, the entry point, the engines' metrics, the picker's
 *   state, the pool's TTFT model.
 * A pool whose profile has a "view" plugin reads its requests: the prompt is rendered and
 * hashed, recorded in the prefix index, answers are timed for the TTFT model, and SLO
 * headers order the replicas. A "leases" pool does none of that.
 */
export type Sees = "leases" | "view";

/**
 * Drops replicas that should not be offered first. A filter fails open (keeps everyone
 * rather than no one) and never drops a replica for stale metrics alone; what it drops is
 * tried last, by load.
 */
export interface Filter {
  sees: Sees;
  keep(candidates: readonly Candidate[], isFresh: (c: Candidate) => boolean, input: PickInput): Candidate[];
}

/** Everything a scorer may read, computed once per pick. */
export interface ScoringContext {
  candidates: readonly Candidate[];
  /** Per candidate: are its metrics fresh (scoring/freshness.ts)? */
  fresh: readonly boolean[];
  request: RequestFeatures;
  /** PrefixIndex.match of the request's hashes. */
  matches: ReadonlyMap<string, number>;
  settings: ScoringSettings;
}

/**
 * One score per candidate, in order: a number meant to lie in [0, 1] (the sum clamps), or
 * null where the scorer needs metrics the candidate does not have fresh.
 */
export interface Scorer {
  sees: Sees;
  score(ctx: ScoringContext): (number | null)[];
}

/** A pick after the filters and scorers: what guards and pickers decide on. */
export interface Stage {
  input: PickInput;
  /** The eligible replicas the filters kept, in input order; never empty. */
  kept: readonly Candidate[];
  /** What the scorers read, for `kept`. */
  context: ScoringContext;
  /** Per replica of `kept`: Σ weight × score over the profile's scorers; all 0 without scorers. */
  totals: readonly number[];
}

/** An order of `kept` (every one of them once), why its first was chosen, and the picker's next state if it changed. */
export interface Picked {
  order: readonly Candidate[];
  reason: PickReason;
  state?: PickerState;
}

/** Answers the pick itself when its condition holds (the fleet is imbalanced, every metric is stale), else null: the picker decides. */
export interface Guard {
  sees: Sees;
  check(stage: Stage): Picked | null;
}

/** Orders the kept replicas: the profile's algorithm. */
export interface Picker {
  sees: Sees;
  pick(stage: Stage): Picked;
}
