/**
 * The pins an isolate has seen, so a returning client is routed without asking its
 * shard. The shard stays the truth: entries are revalidated in the background and
 * replaced by whatever the shard answers.
 */

export const PIN_CACHE_MAX_ENTRIES = 20_000; // ~100 bytes each: ~2 MB of a 128 MB isolate; LRU past that
export const PIN_REVALIDATE_MS = 5_000; // a cached pin in use is re-read from its shard this often (bounds how long another isolate's drop goes unseen)
const TTL_REFRESH_GRANULARITY_MS = 30_000; // at most one pin write per 30 s per active session (or TTL/10 if shorter)

/** How much a pin must have aged before a use rewrites its stored expiry. */
export const refreshGranularityMs = (ttlMs: number): number => Math.min(TTL_REFRESH_GRANULARITY_MS, ttlMs / 10);

export interface CachedPin {
  /** Affinity shard holding the pin (key hash mod AFFINITY_SHARDS), kept so a hit needs no hashing. */
  shard: number;
  pool: string;
  replica: string;
  /** Domain time the pin expires unless used again (slid locally on every use). */
  expiresAt: number;
  /** Domain time of the last use whose slide was sent to the shard. */
  sentUseAt: number;
  /** Real time this entry was last confirmed by the shard. */
  checkedAt: number;
}

export const pinSlot = (key: string, model: string): string => `${key}\u0000${model}`;

/** A Map in least-recently-used order: a read moves the entry to the back, the front is evicted. */
export class PinCache {
  #entries = new Map<string, CachedPin>();

  constructor(private readonly maxEntries = PIN_CACHE_MAX_ENTRIES) {}

  get(slot: string): CachedPin | undefined {
    const entry = this.#entries.get(slot);
    if (entry) {
      this.#entries.delete(slot);
      this.#entries.set(slot, entry);
    }
    return entry;
  }

  /** Reads without touching the LRU order. */
  peek(slot: string): CachedPin | undefined {
    return this.#entries.get(slot);
  }

  set(slot: string, pin: CachedPin): void {
    this.#entries.delete(slot);
    this.#entries.set(slot, pin);
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }

  delete(slot: string): void {
    this.#entries.delete(slot);
  }

  get size(): number {
    return this.#entries.size;
  }
}
