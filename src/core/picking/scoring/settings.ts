/**
 * Every tunable of the policies' plugins, with its default and where that default comes
 * from. A pool's `scoring:` config overrides them (config/scoring-schema.ts); the plugins
 * read only what is passed in.
 */

/** The scorers a weighted profile can combine (../scorers/). */
export type ScorerName = "prefix" | "queue" | "kvCache" | "inflight" | "lora" | "locality";
/** Weights are not normalised, as in GAIE: total = Σ weight × clamp(score, 0, 1). A missing name weighs 0. */
export type ScorerWeights = Readonly<Partial<Record<ScorerName, number>>>;

export interface ScoringSettings {
  /** Metrics older than this (ms) are stale and never routed on (freshness.ts). */
  stalenessMs: number;
  saturation: {
    /** A fresh replica with at least this many requests waiting is saturated. */
    queueDepth: number;
    /** A fresh replica with KV use at or above this fraction is saturated. */
    kvUsage: number;
  };
  prefix: {
    /** llm-d's matchLengthWeight w in w·min(1, matched/scale)² + (1−w)·ratio; 0 = pure ratio. */
    matchLengthWeight: number;
    /** llm-d's matchLengthScaleTokens in blocks. */
    matchLengthScaleBlocks: number;
  };
  inflight: {
    /** A replica with at most this many requests in flight scores 1 (llm-d active-request-scorer idleThreshold). */
    idleThreshold: number;
    /** The best a busy replica can score (llm-d maxBusyScore). */
    maxBusyScore: number;
  };
  gaie: { weights: ScorerWeights };
  ray: {
    /** Route by power of two when max − min in-flight exceeds this. */
    imbalancedThreshold: number;
    /** Below this matched fraction, send to the smallest tenants. */
    matchRateThreshold: number;
  };
  sglang: {
    /** Follow the longest match only when its matched fraction exceeds this. */
    cacheThreshold: number;
    /** Imbalanced when max − min in-flight exceeds this... */
    balanceAbs: number;
    /** ...and max exceeds this multiple of min. */
    balanceRel: number;
    /** Where a miss goes: the launcher's smallest tree, or newer SMG's least-loaded replica. */
    onMiss: "smallest_tree" | "min_load";
  };
  switchyard: {
    /** Scorers of the load score that orders everything by load (prefix is weighed separately). */
    weights: ScorerWeights;
    /** Weight of the prefix score when ordering the fallbacks behind an affine choice. */
    prefixWeight: number;
    /** Minimum matched fraction for prefix affinity. */
    matchThreshold: number;
    /** ...and at least this many leading blocks: a match shorter than this saves too little prefill to route on. */
    minMatchBlocks: number;
    /** Balance guard on in-flight per unit of weight: fires when max − min exceeds this... */
    balanceAbs: number;
    /** ...and max exceeds this multiple of min. */
    balanceRel: number;
    /** Busy cap: a replica may hold up to this × its fair share of the pool's in-flight, the request included. */
    busyLoadFactor: number;
    /** Busy cap floor: a replica with at most this many in flight may take one more whatever the pool's mean. */
    busyFloor: number;
  };
}

/** Frozen all the way down: a policy that wrote to its settings would change every pool's. */
export const DEFAULT_SETTINGS: ScoringSettings = deepFreeze({
  // llm-d-router #2408: a 200 ms bound (shorter than the scrape interval) made healthy
  // endpoints stale and the pool "saturated"; PR #2547 raised the default to 5 s.
  stalenessMs: 5_000,
  saturation: {
    queueDepth: 5, // GAIE utilization detector queueDepthThreshold
    kvUsage: 0.8, // GAIE utilization detector kvCacheUtilThreshold
  },
  prefix: {
    matchLengthWeight: 0, // llm-d-router default: pure matched/total ratio, as GAIE
    matchLengthScaleBlocks: 512, // llm-d-router matchLengthScaleTokens 8,192 / 16 tokens per block
  },
  inflight: {
    idleThreshold: 0, // llm-d active-request-scorer default (PR #669)
    maxBusyScore: 1, // llm-d default, "for backwards compat" (PR #669)
  },
  gaie: {
    // GAIE default profile since v1.2.0 (config/loader/defaults.go): prefix 3, queue 2, kv 2.
    weights: { prefix: 3, queue: 2, kvCache: 2 },
  },
  ray: {
    imbalancedThreshold: 10, // PrefixCacheAffinityRouter.initialize_state default
    matchRateThreshold: 0.1, // PrefixCacheAffinityRouter.initialize_state default
  },
  sglang: {
    cacheThreshold: 0.3, // sglang router_args.py launcher default (the Rust Default is 0.5)
    balanceAbs: 64, // launcher default (Rust Default 32)
    balanceRel: 1.5, // launcher default (Rust Default 1.1)
    onMiss: "smallest_tree", // launcher versions; SMG moved to min_load after the death-spiral report (sglang PR #14305)
  },
  switchyard: {
    // In-flight is the router's own, always-fresh signal; queue and kv-cache correct it
    // when the engine's metrics are fresh (GAIE's weight 2 each); LoRA affinity and
    // locality break near-ties (GAIE's default weight 1 for an unweighted scorer).
    weights: { inflight: 2, queue: 2, kvCache: 2, lora: 1, locality: 1 },
    prefixWeight: 3, // GAIE's prefix-cache-scorer weight: fallbacks that also hold the prefix come first
    // Ray's 0.1: the busy cap, not this threshold, bounds the load affinity may add, so a
    // small shared prefix may still choose among otherwise equal replicas.
    matchThreshold: 0.1,
    // 4 blocks = 256 characters ≈ 64 tokens. A short common preamble ("You are a helpful
    // assistant.") fills a block or two of every prompt; following it herded every first
    // turn of docs/routing-quality.md's multi-turn workload onto the replicas that had it.
    minMatchBlocks: 4,
    // NeMo Gym on vllm-router cache_aware: 32 / 1.5 kept 84% prefix hits and ~40% more
    // throughput than 4 / 1.1; a tight fleet-wide gate switches affinity off for every
    // request (vllm-project/router PR #238). The busy cap handles per-replica overload,
    // so this guard is only for gross imbalance.
    balanceAbs: 32,
    balanceRel: 1.5,
    // Bounded-load affinity as in SGLang's prefix_hash and KubeAI's CHWBL, whose 1.25 we
    // started from. Measured in docs/routing-quality.md: at 1.25 a replica holding three of
    // twelve equally busy tenants spilled often enough to cost 11 points of hit rate
    // against strict affinity. Since issue 18 the cap is hard (no pick passes it while a
    // replica has room) and counts the request itself; a hot prompt is spread by the idle
    // rule (busy-cap.ts), not by this factor. At 2 the hard cap spilled 15-17 of 600
    // requests on the shared, burst and hot workloads (~80% hit rate on shared, against
    // 84% with the old soft cap); at 3, 6-8 (82-83%).
    busyLoadFactor: 3,
    // llm-d PR #669 "flexible" example: ≤ 1 request counts as idle. One request in flight
    // leaves an engine's batch nearly empty, while a cache miss costs a whole prefill, so
    // affinity survives the first concurrent request at low load.
    busyFloor: 1,
  },
});

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (typeof inner === "object" && inner !== null) deepFreeze(inner as object);
  return Object.freeze(value);
}

/**
 * A pool's overrides of the defaults, section by section: `{ switchyard: { weights: {...},
 * busyLoadFactor: 1.5 } }` keeps every other switchyard default. A `weights` object
 * replaces the default weights whole (it is the pool's profile, as a GAIE profile lists
 * its scorers); a scorer it leaves out weighs 0.
 */
export type ScoringOverrides = {
  readonly [K in keyof ScoringSettings]?: ScoringSettings[K] extends object ? Partial<ScoringSettings[K]> : ScoringSettings[K];
};

/** DEFAULT_SETTINGS with a pool's overrides applied; neither argument is changed. */
export function scoringSettings(overrides: ScoringOverrides = {}): ScoringSettings {
  const merged: Record<string, unknown> = { ...DEFAULT_SETTINGS };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const base: unknown = DEFAULT_SETTINGS[key as keyof ScoringSettings];
    // A field given as undefined keeps its default, so config can pass optional knobs straight through.
    const given = typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) : value;
    merged[key] = typeof base === "object" && base !== null ? { ...base, ...(given as object) } : given;
  }
  return merged as unknown as ScoringSettings;
}
