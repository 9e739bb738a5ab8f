import { POLICIES } from "./load-policies";
import type { ScoringPolicy } from "./scoring/types";
import { SCORING_POLICIES } from "./scoring/policies";

/**
 * Every policy a pool may name. The load-only ones (weighted, least_loaded, power_of_two)
 * order replicas from weights and leases alone; the rest see the request (prompt blocks,
 * adapter, locality) and the replicas' scraped metrics through the scoring core.
 */
export const POOL_POLICY_NAMES = [...new Set([...Object.keys(POLICIES), ...Object.keys(SCORING_POLICIES)])] as [string, ...string[]];

export type PoolPolicyName = string;

/** The scoring policy a pool names, or null when it names a load-only one. */
export function scoringPolicyOf(name: string): ScoringPolicy | null {
  if (name in POLICIES) return null;
  return (SCORING_POLICIES as Record<string, ScoringPolicy>)[name] ?? null;
}

/** Whether requests to a pool with this policy need their prompt read (prefix blocks, adapter). */
export function readsRequests(name: string): boolean {
  return scoringPolicyOf(name) !== null;
}
