/**
 * An approximate index of which replica holds which prefix blocks in its KV cache, as
 * GAIE's approximate prefix index (approximateprefix/indexer.go): per replica an LRU of
 * block hashes with a capacity in blocks, and a reverse map hash → replicas. It is told
 * about a block when a request is routed (a speculative insert), never about the engine's
 * own evictions; its LRU stands in for them.
 *
 * What `match` counts, precisely: for each replica, the number of leading blocks
 * h_0, h_1, ..., h_{k−1} of the request that are all in that replica's LRU — the run of
 * consecutive blocks from the start, stopping at the replica's first missing block. The
 * walk goes through the hashes in order, as GAIE's matchLongestPrefix does, and stops at
 * the first hash that no still-matching replica holds. It differs from GAIE in one way:
 * GAIE keeps crediting a replica for later blocks after a gap (it only stops when *no*
 * replica holds a block). An engine cannot use block i without blocks 0..i−1 (vLLM looks
 * blocks up in order and stops at the first miss), so a gap ends the useful match; this
 * is llm-d's LongestPrefixScorer rule.
 *
 * Recency: `add` inserts a request's blocks last-first, so its leading blocks are the
 * most recently used and are evicted last. vLLM frees a finished request's blocks in
 * reverse order for the same reason: the tail goes before the shared prefix.
 *
 * Memory bound: an entry is one (replica, block) pair: a number in the replica's Set plus
 * its share of the reverse map. Measured with bench/prefix-index-memory.ts in Node 22
 * (V8 without pointer compression; workerd runs V8 too, and compressed pointers could only
 * shrink this; not measured inside workerd): 67 bytes per entry when one replica holds a block, 84 when two do, 97 when four do. Budget
 * 100 bytes per entry: the index holds at most capacityBlocks × replicas entries, so at
 * GAIE's 31,250 blocks it is ~3.1 MB per replica. A Worker isolate has 128 MB in all, so
 * keep capacity × replicas to a few hundred thousand entries (8,192 × 32 ≈ 26 MB).
 *
 * Capacity: `capacityBlocks` for every replica unless `setCapacity` gives one its own
 * (its engine's size, index-sizing.ts). A replica over its capacity loses its least
 * recently used blocks at once, as a smaller engine would have.
 *
 * Sharing between routers: `add`/`apply` take plain `{ replica, hashes }` inserts, which
 * serialise as JSON exactly (hashes are integers below 2^53), so routers can batch their
 * inserts to a shared object and apply each other's. Applying an insert twice only
 * refreshes recency; order of application decides recency, not wall-clock time, which is
 * as approximate as the rest of the index. `snapshot`/`fromSnapshot` copy a whole index.
 */

/** Per-replica LRU capacity in 64-character blocks: GAIE's lruCapacityPerServer (Llama-3-8B on an H100: ~500K tokens of KV / 16 tokens per block). */
export const DEFAULT_LRU_CAPACITY_BLOCKS = 31_250;

/** One routed request's blocks, to be remembered for the replica it went to. */
export interface PrefixInsert {
  replica: string;
  /** The request's block hashes in prompt order (h_0 first). */
  hashes: readonly number[];
}

/** What a policy may do with the index: read it. Inserting after the pick is the caller's job. */
export interface PrefixIndexReader {
  /** Replica → number of consecutive leading blocks of `hashes` it holds; replicas with 0 are absent. */
  match(hashes: readonly number[]): Map<string, number>;
  /** Blocks the index holds for a replica (its estimated cache footprint), 0 if unknown. */
  blocksOf(replica: string): number;
}

/** A whole index as plain JSON: per replica its hashes, least recently used first. */
export interface PrefixIndexSnapshot {
  version: 1;
  capacityBlocks: number;
  replicas: [replica: string, hashes: number[]][];
}

/** Owners of one block: one replica id, or several (kept compact: one owner is the common case). */
type Owners = string | string[];

export class PrefixIndex implements PrefixIndexReader {
  readonly capacityBlocks: number;
  /** Per replica, its blocks in recency order: a Set iterates in insertion order, so the first is the LRU. */
  private readonly lru = new Map<string, Set<number>>();
  private readonly owners = new Map<number, Owners>();
  /** Replicas with a capacity of their own; the others have capacityBlocks. */
  private readonly capacities = new Map<string, number>();
  private entries = 0;

  constructor(capacityBlocks = DEFAULT_LRU_CAPACITY_BLOCKS) {
    this.capacityBlocks = positiveCapacity(capacityBlocks);
  }

  /** The blocks `replica` may hold before its least recently used go. */
  capacityOf(replica: string): number {
    return this.capacities.get(replica) ?? this.capacityBlocks;
  }

  /** Gives `replica` its own capacity (null: back to capacityBlocks), evicting its LRU blocks past it. */
  setCapacity(replica: string, capacityBlocks: number | null): void {
    if (capacityBlocks === null) this.capacities.delete(replica);
    else this.capacities.set(replica, positiveCapacity(capacityBlocks));
    const blocks = this.lru.get(replica);
    if (blocks !== undefined) this.evictOver(replica, blocks, this.capacityOf(replica));
  }

  /** How many leading blocks of `hashes` one replica holds: `match(hashes).get(replica) ?? 0`, without walking the others. */
  heldRun(replica: string, hashes: readonly number[]): number {
    const blocks = this.lru.get(replica);
    if (blocks === undefined) return 0;
    let n = 0;
    while (n < hashes.length && blocks.has(hashes[n]!)) n++;
    return n;
  }

  match(hashes: readonly number[]): Map<string, number> {
    const matched = new Map<string, number>();
    if (hashes.length === 0) return matched;
    let active = ownerList(this.owners.get(hashes[0]!));
    for (const replica of active) matched.set(replica, 1);
    for (let i = 1; i < hashes.length && active.length > 0; i++) {
      const here = this.owners.get(hashes[i]!);
      if (here === undefined) break;
      active = active.filter((replica) => owns(here, replica));
      for (const replica of active) matched.set(replica, i + 1);
    }
    return matched;
  }

  blocksOf(replica: string): number {
    return this.lru.get(replica)?.size ?? 0;
  }

  /** Total (replica, block) entries: the quantity the memory bound is stated in. */
  get size(): number {
    return this.entries;
  }

  /** Distinct blocks in the reverse map (held by at least one replica). */
  get distinctBlocks(): number {
    return this.owners.size;
  }

  /** Replicas with at least one block. */
  replicas(): string[] {
    return [...this.lru.keys()];
  }

  /** Remember that `replica` now holds these blocks (most recently used), evicting its LRU blocks past capacity. */
  add(replica: string, hashes: readonly number[]): void {
    if (hashes.length === 0) return;
    let blocks = this.lru.get(replica);
    if (blocks === undefined) this.lru.set(replica, (blocks = new Set()));
    // Last block first, so h_0 ends up most recent (see the header).
    for (let i = hashes.length - 1; i >= 0; i--) {
      const hash = hashes[i]!;
      if (blocks.delete(hash)) blocks.add(hash); // already held: refresh recency only
      else {
        blocks.add(hash);
        this.entries++;
        this.owners.set(hash, withOwner(this.owners.get(hash), replica));
      }
    }
    this.evictOver(replica, blocks, this.capacityOf(replica));
  }

  /** Apply a batch of inserts (e.g. other routers' routing decisions) in order. */
  apply(inserts: readonly PrefixInsert[]): void {
    for (const insert of inserts) this.add(insert.replica, insert.hashes);
  }

  /** Forget a replica (it left the pool, or restarted with an empty cache). */
  removeReplica(replica: string): void {
    const blocks = this.lru.get(replica);
    if (blocks === undefined) return;
    for (const hash of blocks) this.dropOwner(hash, replica);
    this.entries -= blocks.size;
    this.lru.delete(replica);
  }

  /** Forget every replica not in `keep` (GAIE purges inactive pods every 2 minutes). */
  retain(keep: ReadonlySet<string>): void {
    for (const replica of [...this.lru.keys()]) if (!keep.has(replica)) this.removeReplica(replica);
    for (const replica of [...this.capacities.keys()]) if (!keep.has(replica)) this.capacities.delete(replica);
  }

  snapshot(): PrefixIndexSnapshot {
    return { version: 1, capacityBlocks: this.capacityBlocks, replicas: [...this.lru].map(([replica, blocks]) => [replica, [...blocks]]) };
  }

  static fromSnapshot(snapshot: PrefixIndexSnapshot, capacityBlocks = snapshot.capacityBlocks): PrefixIndex {
    const index = new PrefixIndex(capacityBlocks);
    for (const [replica, hashes] of snapshot.replicas) {
      // Snapshot order is LRU first; `add` inserts last-first, so hand it newest first.
      index.add(replica, [...hashes].reverse());
    }
    return index;
  }

  private evictOver(replica: string, blocks: Set<number>, capacity: number): void {
    while (blocks.size > capacity) {
      const oldest = blocks.values().next().value as number;
      blocks.delete(oldest);
      this.entries--;
      this.dropOwner(oldest, replica);
    }
    if (blocks.size === 0) this.lru.delete(replica);
  }

  private dropOwner(hash: number, replica: string): void {
    const rest = withoutOwner(this.owners.get(hash), replica);
    if (rest === undefined) this.owners.delete(hash);
    else this.owners.set(hash, rest);
  }
}

function positiveCapacity(blocks: number): number {
  if (!Number.isInteger(blocks) || blocks <= 0) throw new RangeError(`PrefixIndex: capacityBlocks must be a positive integer, got ${blocks}`);
  return blocks;
}

const NONE: readonly string[] = [];

function ownerList(owners: Owners | undefined): readonly string[] {
  if (owners === undefined) return NONE;
  return typeof owners === "string" ? [owners] : owners;
}

function owns(owners: Owners, replica: string): boolean {
  return typeof owners === "string" ? owners === replica : owners.includes(replica);
}

function withOwner(owners: Owners | undefined, replica: string): Owners {
  if (owners === undefined) return replica;
  if (typeof owners === "string") return owners === replica ? owners : [owners, replica];
  if (!owners.includes(replica)) owners.push(replica);
  return owners;
}

function withoutOwner(owners: Owners | undefined, replica: string): Owners | undefined {
  if (owners === undefined || owners === replica) return undefined;
  if (typeof owners === "string") return owners;
  const rest = owners.filter((r) => r !== replica);
  return rest.length === 0 ? undefined : rest.length === 1 ? rest[0] : rest;
}
