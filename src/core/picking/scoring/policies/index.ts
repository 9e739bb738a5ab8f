import type { ScoringPolicy } from "../types";
import { gaiePolicy } from "./gaie";
import { leastLoadedPolicy } from "./least-loaded";
import { powerOfTwoPolicy } from "./power-of-two";
import { randomPolicy } from "./random";
import { rayPolicy } from "./ray";
import { roundRobinPolicy } from "./round-robin";
import { sglangPolicy } from "./sglang";
import { switchyardPolicy } from "./switchyard";

/**
 * Every replica-picking policy under one signature, for the routing-quality benchmark to
 * run side by side on the same requests. `switchyard` is the proposed default.
 */
export const SCORING_POLICIES = {
  random: randomPolicy,
  round_robin: roundRobinPolicy,
  power_of_two: powerOfTwoPolicy,
  least_loaded: leastLoadedPolicy,
  gaie: gaiePolicy,
  ray_prefix: rayPolicy,
  sglang_cache_aware: sglangPolicy,
  switchyard: switchyardPolicy,
} satisfies Record<string, ScoringPolicy>;

export type ScoringPolicyName = keyof typeof SCORING_POLICIES;
