/**
 * The seam between the pure replica-picking core and the router that feeds it. Everything
 * here is plain data: the router builds it from its shared state (in-flight leases from
 * the pool's Durable Object and the isolate's own counts, scraped engine metrics, the
 * prefix index) and a policy returns an order and the index insert to make.
 */
import type { RequestFeatures } from "../prefix/features";
import type { PrefixIndexReader, PrefixInsert } from "../prefix/prefix-index";
export type { RequestFeatures };
import type { RandomSource } from "../../../lib/random";
import type { ReplicaMetrics } from "../vllm-metrics";
import type { ScoringSettings } from "./settings";

/** One replica as a policy sees it. */
export interface Candidate {
  id: string;
  /** Relative capacity; weight <= 0 (or NaN) means drained: never chosen. */
  weight: number;
  /** Requests this router fleet has leased to the replica (every isolate's, from the pool's object). */
  inflight: number;
  /** Config labels, e.g. `{ region: "weur", colo: "AMS" }`, matched by the locality scorer. */
  labels: Readonly<Record<string, string>>;
  /** The last engine scrape, or null when there is none. Old scrapes are judged against `settings.stalenessMs`. */
  metrics: ReplicaMetrics | null;
}

/** State a policy carries from one pick to the next; passed in and returned, never kept inside. */
export interface PickerState {
  /** Round robin's position; other policies return it unchanged. */
  roundRobinCursor: number;
}

export const INITIAL_PICKER_STATE: PickerState = { roundRobinCursor: 0 };

export interface PickInput {
  candidates: readonly Candidate[];
  request: RequestFeatures;
  /** Read-only: inserting the pick is the caller's job (see `PickResult.insert`). */
  index: PrefixIndexReader;
  /** ms since the epoch; metrics older than `settings.stalenessMs` are stale. */
  now: number;
  settings: ScoringSettings;
  state: PickerState;
  random: RandomSource;
  /** Predicted time to first token on a replica, ms, from the pool's learned model; null while it learns. */
  predictTtftMs?: (replica: string) => number | null;
  /**
   * Requests this isolate has in flight on a replica whose prompts open with the same
   * blocks as this one (prefix/prefix-load.ts): how much of the replica's load this
   * prompt's prefix is. Absent: 0.
   */
  prefixLoad?: (replica: string) => number;
}

/** Why the first choice was made; for logs, metrics and tests. */
export type PickReason =
  | "none" // no eligible candidate
  | "weighted"
  | "random"
  | "round_robin"
  | "power_of_two"
  | "least_loaded"
  | "scored" // weighted scores, max-score picker
  | "stale" // every candidate's metrics were stale or missing: load counts + power of two
  | "imbalanced" // a balance guard fired: routed by load, prefix ignored
  | "prefix" // prefix affinity chose
  | "prefix_capped" // a prefix match existed only on replicas over the busy cap: routed by load
  | "prefix_predicted" // every replica at its busy cap, and the holder predicted to answer sooner than a cold replica
  | "cold" // no useful prefix match: routed by load
  | "smallest_tree"; // a miss sent to the replica with the fewest indexed blocks (Ray, SGLang)

export interface PickResult {
  /** Replica ids: [0] is the choice, the rest the fallbacks in order. Every eligible candidate appears once. */
  order: string[];
  reason: PickReason;
  /** The blocks the chosen replica will now cache: apply to the index (and share it) once the request is sent. */
  insert: PrefixInsert | null;
  state: PickerState;
}
