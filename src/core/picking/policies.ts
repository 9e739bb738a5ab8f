import type { Profile } from "./profile";
import { profileSees, runProfile } from "./profile";
import type { PickInput, PickResult } from "./scoring/types";

/**
 * Every policy a pool may name, as a profile of plugins (profile.ts). A new policy is its
 * plugin's file in the folder of its kind (pickers/, guards/, filters/, scorers/), the
 * plugin's line in that folder's index, and one entry here. The config's list of names
 * (config/schema.ts) and whether a pool reads its requests (readsRequests) follow.
 */
export const POLICIES = {
  /** The configured split, exactly (the default). */
  weighted: { filters: [], scorers: null, guards: [], picker: "weighted" },
  /** Fewest in-flight per unit of weight, random ties. */
  least_loaded: { filters: [], scorers: null, guards: [], picker: "least_loaded" },
  /** Ray Serve's default router: the lighter of two drawn. */
  power_of_two: { filters: [], scorers: null, guards: [], picker: "power_of_two" },
  /** The benchmarks' baseline. */
  random: { filters: [], scorers: null, guards: [], picker: "random" },
  /** vLLM production-stack's `roundrobin`, over replicas sorted by id. */
  round_robin: { filters: [], scorers: null, guards: [], picker: "round_robin" },
  /**
   * The Gateway API Inference Extension endpoint picker's default profile (v1.2.0+,
   * config/loader/defaults.go): no filters, `prefix-cache-scorer` 3 + `queue-scorer` 2 +
   * `kv-cache-utilization-scorer` 2, `max-score-picker` with random ties; the full sorted
   * list as fallbacks. Where it differs from GAIE itself: a stale replica's queue and kv
   * scores are replaced by a stand-in, and with every replica stale it routes by load with
   * two choices (the stale_metrics guard). GAIE scores stale metrics as they are; the
   * benchmark compares the scoring, not that bug.
   */
  gaie: { filters: [], scorers: "gaie", guards: ["stale_metrics"], picker: "max_score" },
  /** Ray Serve's PrefixCacheAffinityRouter. */
  ray_prefix: { filters: [], scorers: null, guards: ["ray_balance"], picker: "ray_prefix" },
  /** SGLang router's `cache_aware`, with the launcher's defaults. */
  sglang_cache_aware: { filters: [], scorers: null, guards: ["sglang_balance"], picker: "sglang_cache_aware" },
  /** Ours, for LLM pools: bounded prefix affinity, two choices on load elsewhere (pickers/switchyard.ts). */
  switchyard: { filters: ["lora", "saturation"], scorers: "switchyard", guards: ["balance"], picker: "switchyard" },
} as const satisfies Record<string, Profile>;

export type PolicyName = keyof typeof POLICIES;

/** Non-empty tuple so it can feed `z.enum(POLICY_NAMES)` directly; in the table's order. */
export const POLICY_NAMES = Object.keys(POLICIES) as [PolicyName, ...PolicyName[]];

const READS_REQUESTS = new Map(POLICY_NAMES.map((name) => [name, profileSees(POLICIES[name]) === "view"]));

/**
 * Whether requests to a pool with this policy need their prompt read (prefix blocks,
 * adapter, entry point): whether a plugin of its profile sees the view. Such a pool also
 * keeps a picker state, records prompts in its prefix index, learns TTFT and honours SLO
 * headers; the others pick from weights and leases alone.
 */
export function readsRequests(name: PolicyName): boolean {
  return READS_REQUESTS.get(name)!;
}

/**
 * Policies whose draw ignores weight (a weight of 0 still drains a replica): over time each
 * replica they may pick takes an equal share, whatever the weights say. The others share
 * by weight: exactly (weighted), or in the long run (least_loaded, the scoring profiles).
 */
const EVEN_SHARES: ReadonlySet<PolicyName> = new Set(["power_of_two", "random", "round_robin"]);

export function sharesEvenly(name: PolicyName): boolean {
  return EVEN_SHARES.has(name);
}

/** One pick by the named policy. */
export function runPolicy(name: PolicyName, input: PickInput): PickResult {
  return runProfile(POLICIES[name], input);
}
