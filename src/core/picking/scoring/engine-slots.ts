import type { ReplicaMetrics } from "../vllm-metrics";
import { known } from "../vllm-metrics";

/**
 * Each replica's running slots (vLLM's `max_num_seqs`) as far as its scrapes have shown
 * them: vLLM publishes no gauge for it (`cache_config_info` carries the cache's sizes, not
 * the scheduler's), so a sample with requests waiting is read as a full running batch and
 * its `num_requests_running` as the slots; the largest such reading stands. Until a
 * replica has been seen queueing its slots are unknown (null), and the engine's own
 * waiting count stands in for the queue (ttft-model.ts, queueingAhead). A batch cut short
 * by a full KV cache reads lower; a later full batch corrects it upward.
 */
export class EngineSlots {
  #slots = new Map<string, number>();

  observe(replica: string, m: ReplicaMetrics | null): void {
    if (!m || !known(m.running) || !known(m.waiting) || m.waiting <= 0 || m.running <= 0) return;
    this.#slots.set(replica, Math.max(this.#slots.get(replica) ?? 0, m.running));
  }

  of(replica: string): number | null {
    return this.#slots.get(replica) ?? null;
  }
}
