/**
 * The pool object's recent prefix-cache inserts, as every isolate needs them: each
 * isolate guesses which replica caches which prompt blocks from the requests IT routed,
 * so it also needs the others' guesses. Isolates send their inserts with their batches;
 * the object keeps the newest in a log bounded by the number of block hashes it holds,
 * and hands each isolate the entries past its cursor, its own excepted.
 *
 * Memory: at most PREFIX_LOG_MAX_HASHES hashes (8 bytes each as numbers, plus ~100 bytes
 * of overhead per entry): about 1 MB per pool object. An isolate further behind than the
 * log reaches gets what is left: the index is approximate by design (GAIE's is too).
 */

export const PREFIX_LOG_MAX_HASHES = 100_000; // ~16 full 256-block prompts per replica of a 25-replica pool: the recent working set
export const PREFIX_SYNC_MAX_HASHES = 20_000; // per answer: keeps one sync's payload near 200 KB however far behind an isolate is

export interface PrefixInsert {
  replica: string;
  /** Chained block hashes of one routed prompt, in order. */
  hashes: number[];
}

interface Entry extends PrefixInsert {
  seq: number;
  isolate: string;
}

export class PrefixLog {
  #entries: Entry[] = [];
  #hashes = 0;
  #seq = 0;

  constructor(
    private readonly maxHashes = PREFIX_LOG_MAX_HASHES,
    private readonly syncMaxHashes = PREFIX_SYNC_MAX_HASHES,
  ) {}

  /** Sequence number of the newest entry (0 before any). */
  get cursor(): number {
    return this.#seq;
  }

  get hashes(): number {
    return this.#hashes;
  }

  append(isolate: string, inserts: readonly PrefixInsert[]): void {
    for (const insert of inserts) {
      if (insert.hashes.length === 0) continue;
      this.#entries.push({ seq: ++this.#seq, isolate, replica: insert.replica, hashes: insert.hashes });
      this.#hashes += insert.hashes.length;
    }
    while (this.#hashes > this.maxHashes && this.#entries.length > 0) this.#hashes -= this.#entries.shift()!.hashes.length;
  }

  /**
   * Other isolates' inserts after `cursor`, oldest first, at most syncMaxHashes of them
   * (the newest, when there are more: an isolate that fell behind catches up on the
   * present, not the past). `cursor` in the answer is where to ask from next time.
   */
  since(cursor: number, isolate: string): { cursor: number; inserts: PrefixInsert[] } {
    const inserts: PrefixInsert[] = [];
    let budget = this.syncMaxHashes;
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i]!;
      if (entry.seq <= cursor) break;
      if (entry.isolate === isolate) continue;
      if (entry.hashes.length > budget) break;
      budget -= entry.hashes.length;
      inserts.push({ replica: entry.replica, hashes: entry.hashes });
    }
    return { cursor: this.#seq, inserts: inserts.reverse() };
  }

  /** Forgets a replica that left the pool. */
  dropReplica(replica: string): void {
    this.#entries = this.#entries.filter((e) => e.replica !== replica);
    this.#hashes = this.#entries.reduce((n, e) => n + e.hashes.length, 0);
  }
}
