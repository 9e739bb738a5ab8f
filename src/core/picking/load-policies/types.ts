import type { RandomSource } from "../../../lib/random";

/** One replica as a policy sees it: a plain snapshot, no live state. */
export interface PolicyCandidate {
  id: string;
  /** Relative capacity / traffic share. Weight <= 0 (or NaN) means "drained": never chosen. */
  weight: number;
  /** Requests currently leased to this replica (from the pool's Durable Object). */
  inflight: number;
}

/**
 * Full fallback order: [0] is the choice, the rest are fallbacks. Weight <= 0 is
 * excluded entirely. Never mutates input. All randomness comes from `random`, so a
 * scripted source pins the outcome in tests.
 */
export type Policy = (candidates: readonly PolicyCandidate[], random: RandomSource) => PolicyCandidate[];
