/**
 * Plain data that crosses the Worker ↔ affinity shard boundary (structured-clonable,
 * small): a claim awaited on a pin miss, and the isolates' batches of pin news.
 */
import type { CounterSample } from "../../lib/counters";
import type { Acked, BatchedSync, Sealed } from "../state/batches";

export type AffinityEvent = "hit" | "miss" | "created" | "expired" | "dropped_error" | "dropped_unavailable";

/** A pin lookup the isolate could not answer from its cache: honour the stored pin or store the proposal. */
export interface PinClaim {
  key: string;
  model: string;
  pool: string;
  ttlMs: number;
  /** The isolate's pick, pinned when no usable pin exists. */
  proposal: string;
  /** Replicas the isolate may route to now; a stored pin elsewhere is replaced. */
  allowed: string[];
  /** A pin on this replica failed in this isolate and must go first (its drop may still be queued). */
  drop: string | null;
}

export interface PinResult {
  replica: string;
  expiresAt: number;
}

export interface PinTouch {
  key: string;
  model: string;
  /** Domain time of the last use; null asks for the pin's state without sliding it. */
  usedAt: number | null;
  ttlMs: number;
}

export interface PinDrop {
  key: string;
  model: string;
  replica: string;
}

/** What an isolate's pin cache learned since its last batch to one shard. */
export interface ShardNews {
  touches: PinTouch[];
  drops: PinDrop[];
  /** Pins used from an isolate's cache, per model. */
  hits: Record<string, number>;
}

/** A shard batch as sent: applied by the shard exactly once, by `seq`. */
export type ShardBatch = Sealed<ShardNews>;

export type ShardSync = BatchedSync<ShardNews>;

/** The stored pin of every touched (key, model) in the request's batches, null where there is none. */
export interface ShardSyncResult extends Acked {
  pins: { key: string; model: string; pin: PinResult | null }[];
}

export interface ShardSnapshot {
  events: CounterSample[]; // {event, model}
  pins: number;
}
