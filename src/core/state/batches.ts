/**
 * The shape every isolate ↔ Durable Object exchange shares (src/app/state/state-client.ts
 * on the isolate's side, ./applied-ledger.ts on the object's): batches numbered per
 * isolate, kept by the isolate until the object acknowledges them, applied by the object
 * once whatever number of times they arrive.
 */

/** A batch as sent: the payload plus its sequence number, 1, 2, 3… per isolate and object. */
export type Sealed<B> = B & { seq: number };

/** What every sync request carries, besides its object's own fields. */
export interface BatchedSync<B> {
  /** Random per isolate (the ledger's key). */
  isolate: string;
  /** Batches not yet acknowledged, oldest first; a resent one is skipped. */
  batches: Sealed<B>[];
}

/** What every sync answer carries, besides the object's view. */
export interface Acked {
  /** Highest batch seq of this isolate the object has applied (0: none). */
  acked: number;
}
