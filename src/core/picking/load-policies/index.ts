import { leastLoaded } from "./least-loaded";
import { powerOfTwo } from "./power-of-two";
import type { Policy } from "./types";
import { weighted } from "./weighted";

export type { Policy, PolicyCandidate } from "./types";

/** The registry: config names a policy by key. A new policy is one file plus one line here. */
export const POLICIES = {
  weighted,
  least_loaded: leastLoaded,
  power_of_two: powerOfTwo,
} satisfies Record<string, Policy>;

export type PolicyName = keyof typeof POLICIES;

/** Non-empty tuple so it can feed `z.enum(POLICY_NAMES)` directly. */
export const POLICY_NAMES = Object.keys(POLICIES) as [PolicyName, ...PolicyName[]];
