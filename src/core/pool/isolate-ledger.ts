/**
 * A pool object's account of the isolates routing through it: each isolate's requests
 * in flight per replica (absolute, as last reported). Which of its batches were applied
 * is the shared AppliedLedger's business (src/core/state/applied-ledger.ts). An isolate that stops reporting — evicted, crashed, its colo gone — simply
 * expires: no release is ever needed, so nothing can leak. Running totals keep each
 * report O(replicas) however many isolates there are.
 */
export class IsolateLedger {
  #isolates = new Map<string, { seq: number; counts: Record<string, number>; expiresAt: number }>();
  #totals = new Map<string, number>();
  #nextSweep = 0;

  constructor(
    /** An isolate silent this long no longer counts. */
    private readonly ttlMs: number,
    /** Expired entries are looked for at most this often. */
    private readonly sweepMs: number,
  ) {}

  /** Records an in-flight report unless a newer one from the same isolate came first. */
  report(isolate: string, seq: number, counts: Record<string, number>, now: number): void {
    this.sweep(now);
    const entry = this.#isolates.get(isolate);
    if (entry && seq <= entry.seq) {
      entry.expiresAt = Math.max(entry.expiresAt, now + this.ttlMs);
      return;
    }
    this.#add(entry?.counts ?? {}, -1);
    this.#add(counts, +1);
    this.#isolates.set(isolate, { seq, counts: { ...counts }, expiresAt: now + this.ttlMs });
  }

  /** In flight on `replica` summed over live isolates, minus `except`'s own share. */
  inflight(replica: string, except: string | null = null): number {
    const total = this.#totals.get(replica) ?? 0;
    const own = except === null ? 0 : (this.#isolates.get(except)?.counts[replica] ?? 0);
    return total - own;
  }

  get liveIsolates(): number {
    return this.#isolates.size;
  }

  sweep(now: number): void {
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + this.sweepMs;
    for (const [isolate, entry] of this.#isolates) {
      if (entry.expiresAt > now) continue;
      this.#add(entry.counts, -1);
      this.#isolates.delete(isolate);
    }
  }

  #add(counts: Record<string, number>, sign: 1 | -1): void {
    for (const [replica, n] of Object.entries(counts)) {
      const next = (this.#totals.get(replica) ?? 0) + sign * n;
      if (next <= 0) this.#totals.delete(replica);
      else this.#totals.set(replica, next);
    }
  }
}
