import * as z from "zod/mini";
import type { ScorerWeights, ScoringSettings } from "../picking/scoring/settings";
import { DEFAULT_SETTINGS, scoringSettings } from "../picking/scoring/settings";
import { atMost, MAX_COUNT, MAX_WEIGHT } from "./bounds";

/**
 * Knobs of the inference-aware policies (`policy: switchyard` or `gaie`), per pool. Every
 * field is optional: a left-out one keeps the default in src/core/picking/scoring/settings.ts,
 * where each default carries its reason. The reference policies (`ray_prefix`,
 * `sglang_cache_aware`) keep their projects' own defaults.
 */

export const DEFAULT_SHED_RETRY_AFTER_S = 1; // a saturated engine drains a queue of 5 in about a second at a few hundred tokens/s

const weight = z.number().check(z.minimum(0, { error: "must be >= 0" }), atMost(MAX_WEIGHT, "relative weight"));
const fraction = z.number().check(z.minimum(0), z.maximum(1));

export const ScorerWeightsSchema = z.strictObject({
  prefix: z.optional(weight),
  queue: z.optional(weight),
  kv_cache: z.optional(weight),
  inflight: z.optional(weight),
  lora: z.optional(weight),
  locality: z.optional(weight),
});

export const ScoringSchema = z.strictObject({
  /**
   * The weighted scorers: `gaie`'s whole profile; for `switchyard` the load score, with
   * `prefix` weighing the prefix match among the fallbacks behind an affine choice.
   */
  weights: z.optional(ScorerWeightsSchema),
  /** `switchyard`: the smallest matched fraction of a prompt that counts as affinity. */
  match_threshold: z.optional(fraction),
  /** `switchyard`: the fewest leading blocks (64 characters each) that count as affinity. */
  min_match_blocks: z.optional(z.int().check(z.minimum(1), atMost(MAX_COUNT, "blocks"))),
  /** A replica with fresh metrics at or past either bound is saturated (filtered, and sheddable requests are refused). */
  saturation: z.optional(z.strictObject({ queue_depth: z.optional(z.int().check(z.minimum(1), atMost(MAX_COUNT, "requests"))), kv_usage: z.optional(fraction) })),
  /** Balance guard: route by load, prefix ignored, when max − min in-flight > abs and max > rel × min. */
  balance: z.optional(z.strictObject({ abs: z.optional(z.number().check(z.minimum(0), atMost(MAX_COUNT, "requests"))), rel: z.optional(z.number().check(z.minimum(1), atMost(MAX_COUNT, "factor"))) })),
  /** Busy cap: prefix affinity holds while a replica's in-flight ≤ max(floor, load_factor × its fair share + 1). */
  busy_cap: z.optional(z.strictObject({ load_factor: z.optional(z.number().check(z.minimum(1), atMost(MAX_COUNT, "factor"))), floor: z.optional(z.int().check(z.minimum(0), atMost(MAX_COUNT, "requests"))) })),
  /**
   * Blocks remembered per replica in each isolate's prefix index, whatever the engines say.
   * Left out: each replica's engine's size (vllm:cache_config_info), the default until it
   * says (picking/prefix/index-sizing.ts).
   */
  index_capacity_blocks: z.optional(z.int().check(z.minimum(1), atMost(MAX_COUNT, "blocks per replica"))),
});

export type ScoringConfig = z.output<typeof ScoringSchema>;

/**
 * The settings a pool's policies read: the defaults with the pool's overrides. Given
 * weights replace the profile's one by one; a scorer left out keeps its default weight
 * (0 turns it off). For `switchyard`, `weights.prefix` is its prefix weight.
 */
export function poolScoringSettings(config: ScoringConfig | undefined, stalenessMs: number): ScoringSettings {
  const d = DEFAULT_SETTINGS;
  const w = config?.weights;
  const given: ScorerWeights = {
    ...(w?.prefix !== undefined && { prefix: w.prefix }),
    ...(w?.queue !== undefined && { queue: w.queue }),
    ...(w?.kv_cache !== undefined && { kvCache: w.kv_cache }),
    ...(w?.inflight !== undefined && { inflight: w.inflight }),
    ...(w?.lora !== undefined && { lora: w.lora }),
    ...(w?.locality !== undefined && { locality: w.locality }),
  };
  const { prefix, ...load } = given;
  return scoringSettings({
    stalenessMs,
    saturation: { queueDepth: config?.saturation?.queue_depth, kvUsage: config?.saturation?.kv_usage },
    gaie: { weights: { ...d.gaie.weights, ...given } },
    switchyard: {
      weights: { ...d.switchyard.weights, ...load },
      prefixWeight: prefix,
      matchThreshold: config?.match_threshold,
      minMatchBlocks: config?.min_match_blocks,
      balanceAbs: config?.balance?.abs,
      balanceRel: config?.balance?.rel,
      busyLoadFactor: config?.busy_cap?.load_factor,
      busyFloor: config?.busy_cap?.floor,
    },
  });
}
