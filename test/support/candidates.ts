import { PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import type { RandomSource } from "../../src/lib/random";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import type { Candidate, PickInput, RequestFeatures } from "../../src/core/picking/scoring/types";
import type { ReplicaMetrics } from "../../src/core/picking/vllm-metrics";
import { INITIAL_PICKER_STATE } from "../../src/core/picking/scoring/types";

/** The clock every scoring test reads: metrics sampled at NOW are fresh. */
export const NOW = 1_000_000;

/** Engine metrics: an idle, empty replica sampled at NOW, with the given fields changed. */
export function metrics(fields: Partial<ReplicaMetrics> = {}): ReplicaMetrics {
  return {
    waiting: 0,
    running: 0,
    kvUsage: 0,
    loraRunning: [],
    loraWaiting: [],
    maxLora: 0,
    blockSize: null,
    numGpuBlocks: null,
    prefixHits: null,
    prefixQueries: null,
    itlSumS: null,
    itlCount: null,
    tpotMs: null,
    sampledAt: NOW,
    ...fields,
  };
}

export interface ReplicaSpec {
  weight?: number;
  inflight?: number;
  labels?: Record<string, string>;
  /** Engine metrics; null = none scraped. Default: fresh idle metrics. */
  metrics?: Partial<ReplicaMetrics> | null;
}

/** A frozen candidate, so a policy that mutates its input throws (modules are strict). */
export function replica(id: string, spec: ReplicaSpec = {}): Candidate {
  return Object.freeze({
    id,
    weight: spec.weight ?? 1,
    inflight: spec.inflight ?? 0,
    labels: Object.freeze({ ...spec.labels }),
    metrics: spec.metrics === null ? null : Object.freeze(metrics(spec.metrics ?? {})),
  });
}

export function features(fields: Partial<RequestFeatures> = {}): RequestFeatures {
  return { hashes: [], adapter: null, locality: {}, ...fields };
}

/** A pick input with defaults: no prefix, an empty index, NOW, default settings, a source that must not be drawn from. */
export function pickInput(fields: Partial<PickInput> & { random: RandomSource }): PickInput {
  return {
    candidates: [],
    request: features(),
    index: new PrefixIndex(1_000),
    now: NOW,
    settings: DEFAULT_SETTINGS,
    state: INITIAL_PICKER_STATE,
    ...fields,
  };
}

/** Hashes 1..n: distinct, opaque block hashes for index scenarios. */
export function hashes(n: number, from = 1): number[] {
  return Array.from({ length: n }, (_, i) => from + i);
}
