import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";
import type { ReplicaMetrics } from "../vllm-metrics";

/** GAIE lora-affinity-scorer's tiers (loraaffinity/lora_affinity.go). */
export const LORA_ACTIVE = 1; // adapter loaded and running: no load cost
export const LORA_FREE_SLOT = 0.8; // a free adapter slot: it can be loaded at once
export const LORA_WAITING = 0.6; // already queued to load: it will be there, later
export const LORA_NONE = 0; // no slot: loading it means evicting another adapter

/**
 * LoRA affinity, GAIE's `lora-affinity-scorer`: 1.0 if the adapter is running; else 0.8
 * if `running + waiting < maxLora` (a free slot); else 0.6 if the adapter is waiting;
 * else 0. A request for a base model (no adapter) scores 1 everywhere: the scorer then
 * has nothing to prefer. Stale candidates get null.
 */
export function loraScores(candidates: readonly Candidate[], fresh: readonly boolean[], adapter: string | null): (number | null)[] {
  return candidates.map((c, i) => {
    if (adapter === null) return 1;
    if (!fresh[i]) return null;
    const m = c.metrics!;
    if (m.loraRunning.includes(adapter)) return LORA_ACTIVE;
    if (hasFreeSlot(m)) return LORA_FREE_SLOT;
    if (m.loraWaiting.includes(adapter)) return LORA_WAITING;
    return LORA_NONE;
  });
}

/** Reads the request's adapter and the engines' LoRA metrics. */
export const loraScorer: Scorer = { sees: "view", score: (ctx) => loraScores(ctx.candidates, ctx.fresh, ctx.request.adapter) };

/** Unknown slot counts (no `max_lora` reported) are not a reason to avoid a replica. */
function hasFreeSlot(m: ReplicaMetrics): boolean {
  return m.maxLora === null || m.loraRunning.length + m.loraWaiting.length < m.maxLora;
}
