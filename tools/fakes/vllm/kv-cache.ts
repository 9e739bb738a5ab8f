/**
 * The replica's KV blocks and prefix cache, after vLLM v1's block pool.
 *
 * - `capacity` physical blocks. A block is *used* while a running request holds it, and
 *   free otherwise. A free block may still hold a keyed prefix (*idle cached*): it can be
 *   reused by a later request with the same prefix until it is evicted.
 * - Usage is used / capacity. Idle cached blocks count as free, as in vLLM, whose
 *   kv_cache_usage is 1 - free/total with cached-but-unreferenced blocks in the free
 *   queue. (vLLM also keeps one null block out of the total; the fake does not.)
 * - Eviction is LRU over idle cached blocks, only when a never-keyed free block is not
 *   left. A finished request frees its blocks last block first, so a prefix's tail is
 *   evicted before its head (vLLM frees in reverse order for the same reason).
 * - Admission reserves every block a request will need (prompt plus its whole output
 *   budget), so a running request never runs out. vLLM instead allocates as it decodes
 *   and preempts when full; the fake never preempts (see README, "Fake vLLM replica").
 */

export interface KvLease {
  /** Keys this request holds a reference on, in prefix order. */
  held: string[];
  /** Held blocks without a key: partial blocks, output, or prompt blocks not yet committed. */
  anonymous: number;
  /** Blocks promised but not yet allocated. */
  reserved: number;
  /** Full prompt blocks computed by this request, keyed once its prefill is done. */
  pending: string[];
  released: boolean;
}

export class PrefixKvCache {
  /** Keyed blocks; refs = running requests holding each. */
  private readonly keyed = new Map<string, { refs: number }>();
  /** Keyed blocks with refs 0, least recently used first (a Set keeps insertion order). */
  private readonly idle = new Set<string>();
  private used = 0;
  private reserved = 0;
  evicted = 0;

  constructor(readonly capacity: number) {}

  /** How many leading blocks of `keys` are cached: the chain makes this the longest cached prefix. */
  match(keys: readonly string[]): number {
    let n = 0;
    while (n < keys.length && this.keyed.has(keys[n]!)) n++;
    return n;
  }

  /**
   * Admits a request reusing keys[0, hits) that needs `totalBlocks` over its life, of which
   * `promptBlocks` now; null (nothing changed) if they do not fit beside what is promised.
   */
  admit(keys: readonly string[], hits: number, promptBlocks: number, totalBlocks: number): KvLease | null {
    const reused = keys.slice(0, hits);
    const pinnedIdle = reused.filter((k) => this.idle.has(k)).length;
    const fresh = totalBlocks - hits;
    if (this.capacity - this.used - this.reserved - pinnedIdle < fresh) return null;
    for (const k of reused) this.pin(k);
    this.reserved += fresh;
    const lease: KvLease = { held: reused, anonymous: 0, reserved: fresh, pending: keys.slice(hits), released: false };
    this.grow(lease, promptBlocks - hits);
    return lease;
  }

  /** Allocates up to `n` more blocks from the lease's reservation (decode crossing a block boundary). */
  grow(lease: KvLease, n: number): void {
    for (let i = 0; i < n && lease.reserved > 0; i++) {
      if (this.capacity - this.used - this.idle.size <= 0) this.evictOne();
      this.used++;
      this.reserved--;
      lease.reserved--;
      lease.anonymous++;
    }
  }

  /** After prefill: the request's full prompt blocks become reusable prefix blocks. */
  commit(lease: KvLease): void {
    for (const key of lease.pending) {
      // Another request computed the same block meanwhile: vLLM keeps the first copy
      // cached and this one anonymous, and so does the fake.
      if (this.keyed.has(key)) continue;
      this.keyed.set(key, { refs: 1 });
      lease.held.push(key);
      lease.anonymous--;
    }
    lease.pending = [];
  }

  release(lease: KvLease): void {
    if (lease.released) return;
    lease.released = true;
    for (const key of [...lease.held].reverse()) {
      const block = this.keyed.get(key)!;
      if (--block.refs === 0) {
        this.used--;
        this.idle.add(key); // most recently used: evicted last
      }
    }
    this.used -= lease.anonymous;
    this.reserved -= lease.reserved;
    lease.held = [];
    lease.anonymous = 0;
    lease.reserved = 0;
  }

  /** Forgets every idle cached block (vLLM's /reset_prefix_cache); blocks in use stay. */
  resetIdle(): void {
    for (const key of this.idle) this.keyed.delete(key);
    this.idle.clear();
  }

  get usedBlocks(): number {
    return this.used;
  }
  get cachedBlocks(): number {
    return this.keyed.size;
  }
  get idleCachedBlocks(): number {
    return this.idle.size;
  }
  get usage(): number {
    return this.used / this.capacity;
  }

  private pin(key: string): void {
    const block = this.keyed.get(key)!;
    if (block.refs++ === 0) {
      this.idle.delete(key);
      this.used++;
    }
  }

  private evictOne(): void {
    const oldest = this.idle.values().next();
    if (oldest.done) throw new Error("KV cache: no block to evict (reservation accounting is broken)");
    this.idle.delete(oldest.value);
    this.keyed.delete(oldest.value);
    this.evicted++;
  }
}
