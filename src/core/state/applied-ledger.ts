import type { Sealed } from "./batches";

/**
 * Ten minutes of silence is longer than any isolate keeps a batch (MAX_BATCH_AGE_MS in
 * src/app/state/state-client.ts drops one at five): past it, no resend can come.
 */
export const APPLIED_TTL_MS = 600_000;
const SWEEP_MS = 60_000; // forgotten isolates are looked for at most once a minute

/**
 * An object's memory of which batches each isolate has had applied: the dedupe half of
 * the shared-state protocol. A batch is applied the first time its seq is above the
 * isolate's highest applied one and never again, so a batch whose answer was lost and
 * that is sent again counts once. An object whose batches have durable effects stores
 * `applied(isolate)` in the same write as those effects and `restore`s it on start.
 */
export class AppliedLedger {
  #isolates = new Map<string, { applied: number; seenAt: number }>();
  #nextSweep = 0;

  constructor(private readonly ttlMs = APPLIED_TTL_MS) {}

  /** An isolate's applied seq as stored (the object starting); the newer of the two wins. */
  restore(isolate: string, applied: number, seenAt: number): void {
    const entry = this.#isolates.get(isolate);
    if (entry && entry.applied >= applied) return;
    this.#isolates.set(isolate, { applied, seenAt });
  }

  /**
   * The batches of one request that have not been applied yet, in seq order, now marked
   * applied: the caller applies exactly these. Batches may arrive resent, overlapping a
   * concurrent request's, or with gaps (an isolate drops its oldest when its backlog is
   * full); whatever is at or below the highest applied seq is skipped. The caller sweeps
   * (`sweep`) as it sees fit.
   */
  accept<B>(isolate: string, batches: readonly Sealed<B>[], now: number): Sealed<B>[] {
    const entry = this.#isolates.get(isolate) ?? { applied: 0, seenAt: now };
    entry.seenAt = now;
    const fresh = batches.filter((b) => Number.isSafeInteger(b.seq) && b.seq > entry.applied).sort((a, b) => a.seq - b.seq);
    const unique = fresh.filter((b, i) => i === 0 || b.seq !== fresh[i - 1]!.seq);
    if (unique.length > 0) entry.applied = unique[unique.length - 1]!.seq;
    if (entry.applied > 0) this.#isolates.set(isolate, entry);
    return unique;
  }

  /** Highest batch seq applied for this isolate (0: none, or forgotten). */
  applied(isolate: string): number {
    return this.#isolates.get(isolate)?.applied ?? 0;
  }

  get size(): number {
    return this.#isolates.size;
  }

  /** Forgets isolates silent for the TTL; returns them, for an object that stores the ledger to delete. */
  sweep(now: number): string[] {
    if (now < this.#nextSweep) return [];
    this.#nextSweep = now + Math.min(SWEEP_MS, this.ttlMs);
    const gone: string[] = [];
    for (const [isolate, entry] of this.#isolates) {
      if (now - entry.seenAt < this.ttlMs) continue;
      this.#isolates.delete(isolate);
      gone.push(isolate);
    }
    return gone;
  }
}
