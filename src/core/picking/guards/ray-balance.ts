import { powerOfTwo } from "../pickers/power-of-two";
import type { Guard } from "../plugin";
import { isImbalanced } from "./balance";

/**
 * Ray Serve's PrefixCacheAffinityRouter, step 1: when `max − min` in-flight exceeds
 * `imbalanced_threshold` (10), the power-of-two choice, prefix ignored.
 */
export const rayBalance: Guard = {
  sees: "leases",
  check: ({ input, kept }) =>
    isImbalanced(kept.map((c) => c.inflight), input.settings.ray.imbalancedThreshold, 1) ? { order: powerOfTwo(kept, input.random), reason: "imbalanced" } : null,
};
