import type { Filter } from "../plugin";
import type { Candidate } from "../scoring/types";
import type { ReplicaMetrics } from "../vllm-metrics";

/**
 * LoRA filter: drop the replicas whose fresh metrics show they lack the request's adapter
 * and have no free slot for it (not running, not waiting to load, `running + waiting ≥
 * maxLora`): serving it there means evicting another adapter first. GAIE's legacy
 * `loraSoftAffinity` split the fleet the same way.
 *
 * A replica with stale or missing metrics is kept: it is not known to lack the adapter,
 * and stale metrics never drop a replica by themselves (freshness.ts); the LoRA scorer
 * ranks it. Fail-open: when every replica would be dropped, keep them all; the engine
 * evicts an adapter and the request still runs. A request for a base model keeps all.
 */
export function loraFilter(candidates: readonly Candidate[], isFresh: (c: Candidate) => boolean, adapter: string | null): Candidate[] {
  if (adapter === null) return [...candidates];
  const kept = candidates.filter((c) => !isFresh(c) || canServe(c.metrics!, adapter));
  return kept.length > 0 ? kept : [...candidates];
}

/** Reads the request's adapter and the engines' LoRA metrics. */
export const lora: Filter = { sees: "view", keep: (candidates, isFresh, input) => loraFilter(candidates, isFresh, input.request.adapter) };

function canServe(m: ReplicaMetrics, adapter: string): boolean {
  return m.loraRunning.includes(adapter) || m.loraWaiting.includes(adapter) || hasFreeSlot(m);
}

/** Unknown slot counts (no `max_lora` reported) are not a reason to avoid a replica. */
function hasFreeSlot(m: ReplicaMetrics): boolean {
  return m.maxLora === null || m.loraRunning.length + m.loraWaiting.length < m.maxLora;
}
