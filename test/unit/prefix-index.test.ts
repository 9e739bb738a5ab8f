import { describe, expect, it } from "vitest";
import { blockHashes, hashSeed } from "../../src/core/picking/prefix/block-hashes";
import type { PrefixInsert } from "../../src/core/picking/prefix/prefix-index";
import { DEFAULT_LRU_CAPACITY_BLOCKS, PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import { PrefixKvCache } from "../../tools/fakes/vllm/kv-cache";
import { seeded } from "../support/seeded-random";

// Hashes are opaque to the index: small integers keep the scenarios readable.
const h = [100, 101, 102, 103, 104, 105];
const g = [200, 201, 202];

const entries = (index: PrefixIndex) => Object.fromEntries(index.match(h));

describe("PrefixIndex.match", () => {
  it("counts the leading blocks a replica holds", () => {
    const index = new PrefixIndex(100);
    index.add("a", h.slice(0, 4));
    index.add("b", h.slice(0, 2));
    expect(entries(index)).toEqual({ a: 4, b: 2 });
    expect(index.match(h.slice(0, 3))).toEqual(new Map([["a", 3], ["b", 2]]));
  });

  it("stops a replica's count at its first missing block: a gap ends the match (GAIE would credit b with 3)", () => {
    const index = new PrefixIndex(100);
    index.add("a", h.slice(0, 4));
    index.add("b", [h[0]!, h[2]!, h[3]!]); // b lacks h1
    expect(entries(index)).toEqual({ a: 4, b: 1 });
  });

  it("stops at a block no replica holds, even if later blocks are held", () => {
    const index = new PrefixIndex(100);
    index.add("a", [h[0]!, h[2]!, h[3]!]); // nobody holds h1
    expect(entries(index)).toEqual({ a: 1 });
  });

  it("gives nothing to a replica that lacks the first block, whatever it holds later", () => {
    const index = new PrefixIndex(100);
    index.add("a", h.slice(1, 5));
    expect(index.match(h).size).toBe(0);
  });

  it("is empty for no hashes and for an empty index, and leaves recency alone", () => {
    const index = new PrefixIndex(2);
    expect(index.match([]).size).toBe(0);
    expect(index.match(h).size).toBe(0);
    index.add("a", [h[0]!]);
    index.add("a", [h[1]!]); // a: h0 older than h1
    index.match([h[0]!]); // a read: must not refresh h0
    index.add("a", [h[2]!]); // evicts the LRU, which is still h0
    expect(index.match([h[0]!]).size).toBe(0);
    expect(index.match([h[1]!]).get("a")).toBe(1);
  });
});

describe("PrefixIndex LRU", () => {
  it("uses GAIE's default capacity of 31,250 blocks per replica", () => {
    expect(DEFAULT_LRU_CAPACITY_BLOCKS).toBe(31_250);
    expect(new PrefixIndex().capacityBlocks).toBe(31_250);
  });

  it("evicts a replica's least recently used blocks past its capacity and forgets them in the reverse map", () => {
    const index = new PrefixIndex(4);
    index.add("a", h.slice(0, 3)); // recency, oldest first: h2 h1 h0
    index.add("a", g); // h2 h1 h0 g2 g1 g0 → over by 2: h2, h1 go
    expect(index.blocksOf("a")).toBe(4);
    expect(index.size).toBe(4);
    expect(index.distinctBlocks).toBe(4);
    expect(entries(index)).toEqual({ a: 1 });
    expect(index.match([h[1]!]).size).toBe(0);
    expect(index.match(g).get("a")).toBe(3);
  });

  it("keeps a request's leading blocks longest: they are inserted last, as vLLM frees a request's tail first", () => {
    const index = new PrefixIndex(2);
    index.add("a", h.slice(0, 3));
    expect(index.blocksOf("a")).toBe(2);
    expect(entries(index)).toEqual({ a: 2 }); // h0, h1 kept; h2 evicted
  });

  it("evicts per replica: one replica's eviction leaves another's copy of the block", () => {
    const index = new PrefixIndex(3);
    index.add("a", h.slice(0, 3));
    index.add("b", h.slice(0, 3));
    index.add("a", g); // a loses h0..h2
    expect(entries(index)).toEqual({ b: 3 });
    expect(index.distinctBlocks).toBe(6); // h0..h2 (b) + g0..g2 (a)
  });

  it("refreshes a block it already holds instead of counting it twice", () => {
    const index = new PrefixIndex(3);
    index.add("a", [h[0]!]);
    index.add("a", [h[1]!, h[2]!]);
    index.add("a", [h[0]!]); // h0 is now the most recent
    expect(index.size).toBe(3);
    index.add("a", [h[3]!]); // evicts the LRU: h2
    expect(index.match([h[0]!]).get("a")).toBe(1);
    expect(index.match([h[2]!]).size).toBe(0);
    expect(index.size).toBe(3);
  });

  it("refuses a capacity that is not a positive integer", () => {
    expect(() => new PrefixIndex(0)).toThrow(RangeError);
    expect(() => new PrefixIndex(2.5)).toThrow(RangeError);
  });
});

describe("PrefixIndex capacity per replica (sized from each engine)", () => {
  it("gives one replica its own capacity, and a shrink evicts its least recently used blocks at once", () => {
    const index = new PrefixIndex(100);
    index.add("a", h.slice(0, 3)); // recency, oldest first: h2 h1 h0
    index.add("a", g); // … g2 g1 g0
    index.add("b", h.slice(0, 3));
    index.setCapacity("a", 4);
    expect(index.capacityOf("a")).toBe(4);
    expect(index.capacityOf("b")).toBe(100);
    expect(index.blocksOf("a")).toBe(4); // h2, h1 went
    expect(index.match(h)).toEqual(new Map([["a", 1], ["b", 3]]));
    expect(index.size).toBe(7);
    index.add("a", [h[3]!]); // one over 4: h0 goes
    expect(index.match(h)).toEqual(new Map([["b", 3]]));
    expect(index.match(g).get("a")).toBe(3);
  });

  it("grows without evicting, and null puts a replica back on the index's capacity", () => {
    const index = new PrefixIndex(3);
    index.setCapacity("a", 5);
    index.add("a", h.slice(0, 5));
    expect(index.blocksOf("a")).toBe(5);
    index.setCapacity("a", null);
    expect(index.capacityOf("a")).toBe(3);
    expect(index.blocksOf("a")).toBe(3);
    expect(entries(index)).toEqual({ a: 3 });
  });

  it("refuses a capacity that is not a positive integer, and retain forgets a departed replica's", () => {
    const index = new PrefixIndex(10);
    expect(() => index.setCapacity("a", 0)).toThrow(RangeError);
    expect(() => index.setCapacity("a", Number.NaN)).toThrow(RangeError);
    index.setCapacity("a", 2);
    index.setCapacity("b", 2);
    index.retain(new Set(["b"]));
    expect(index.capacityOf("a")).toBe(10);
    expect(index.capacityOf("b")).toBe(2);
  });

  it("heldRun is one replica's entry of match", () => {
    const index = new PrefixIndex(100);
    index.add("a", h.slice(0, 4));
    index.add("b", [h[0]!, h[2]!, h[3]!]);
    for (const replica of ["a", "b", "c"]) {
      for (const query of [h, h.slice(0, 2), g, [], [h[1]!]]) expect(index.heldRun(replica, query), `${replica} ${query}`).toBe(index.match(query).get(replica) ?? 0);
    }
  });
});

describe("PrefixIndex against an engine's prefix cache", () => {
  /**
   * The fake vLLM replica's block pool (tools/fakes/vllm/kv-cache.ts, written after vLLM
   * v1's, independently of the index) as the engine. One request at a time, its prompt in
   * whole blocks, no output blocks: the index sized to the engine's blocks predicts every
   * request's hit exactly, because both evict the least recently used block and both
   * touch a request's blocks with its head most recent (vLLM frees a request's tail
   * first). 600 requests over 8 tenants' 10-block prefixes and 0–3-block tails, in a
   * 40-block cache: the working set (~100 blocks) does not fit, so most requests follow
   * an eviction. Deterministic (seeded), so it never fails by chance.
   */
  it("predicts every request's cached blocks exactly when sized to the engine's blocks", () => {
    const CAPACITY = 40;
    const engine = new PrefixKvCache(CAPACITY);
    const index = new PrefixIndex(1_000); // the default would remember everything…
    index.setCapacity("r", CAPACITY); // …sized as the engine, it forgets what the engine evicts
    const ids = new Map<string, number>();
    const hashOf = (key: string) => ids.get(key) ?? (ids.set(key, ids.size + 1), ids.size);
    const random = seeded(18);
    let held = 0; // requests whose tenant prefix was still cached
    let evicted = 0;
    for (let request = 0; request < 600; request++) {
      const tenant = random.uint32() % 8;
      const prefix = Array.from({ length: 10 }, (_, i) => `t${tenant}/${i}`);
      const tail = Array.from({ length: random.uint32() % 4 }, (_, i) => `t${tenant}/q${request}/${i}`);
      const keys = [...prefix, ...tail];
      const hashes = keys.map(hashOf);

      const expected = index.heldRun("r", hashes);
      index.add("r", hashes);
      const cached = engine.match(keys);
      const lease = engine.admit(keys, cached, keys.length, keys.length)!;
      engine.commit(lease);
      engine.release(lease);

      expect(expected, `request ${request}`).toBe(cached);
      if (cached >= prefix.length) held++;
      else evicted++;
    }
    expect(engine.evicted).toBeGreaterThan(1_000); // the cache was under pressure throughout
    expect(held).toBeGreaterThan(100); // and both outcomes were common
    expect(evicted).toBeGreaterThan(100);
  });
});

describe("PrefixIndex replicas", () => {
  it("removeReplica drops its blocks, its entries and its ownership, and no one else's", () => {
    const index = new PrefixIndex(100);
    index.add("a", h.slice(0, 4));
    index.add("b", h.slice(0, 2));
    index.add("c", g);
    index.removeReplica("a");
    expect(entries(index)).toEqual({ b: 2 });
    expect(index.blocksOf("a")).toBe(0);
    expect(index.size).toBe(5);
    expect(index.distinctBlocks).toBe(5); // h2, h3 had only a: gone from the reverse map
    expect(index.replicas().sort()).toEqual(["b", "c"]);
    index.removeReplica("b");
    index.removeReplica("c");
    index.removeReplica("never-there");
    expect(index.size).toBe(0);
    expect(index.distinctBlocks).toBe(0);
  });

  it("retain keeps only the replicas still in the pool", () => {
    const index = new PrefixIndex(100);
    for (const r of ["a", "b", "c"]) index.add(r, h.slice(0, 2));
    index.retain(new Set(["b"]));
    expect(entries(index)).toEqual({ b: 2 });
    expect(index.size).toBe(2);
  });
});

describe("PrefixIndex sharing", () => {
  it("applies batched inserts from JSON as the same sequence of adds", () => {
    const hashes = blockHashes(hashSeed("m"), "q".repeat(64 * 5), 64, 256);
    const inserts: PrefixInsert[] = [
      { replica: "a", hashes },
      { replica: "b", hashes: hashes.slice(0, 2) },
    ];
    const viaJson = JSON.parse(JSON.stringify(inserts)) as PrefixInsert[];
    const applied = new PrefixIndex(100);
    applied.apply(viaJson);
    const added = new PrefixIndex(100);
    for (const insert of inserts) added.add(insert.replica, insert.hashes);
    expect(applied.match(hashes)).toEqual(new Map([["a", 5], ["b", 2]]));
    expect(applied.snapshot()).toEqual(added.snapshot());
    applied.apply(viaJson); // twice: recency only
    expect(applied.size).toBe(7);
  });

  it("restores a snapshot with the same contents and the same recency order", () => {
    const index = new PrefixIndex(5);
    index.add("a", h.slice(0, 3));
    index.add("a", g.slice(0, 2));
    index.add("b", h.slice(0, 1));
    const snapshot = JSON.parse(JSON.stringify(index.snapshot())) as ReturnType<PrefixIndex["snapshot"]>;
    const copy = PrefixIndex.fromSnapshot(snapshot);
    expect(copy.snapshot()).toEqual(index.snapshot());
    expect(copy.capacityBlocks).toBe(5);
    // The same next insert evicts the same block from both.
    index.add("a", [999]);
    copy.add("a", [999]);
    expect(copy.snapshot()).toEqual(index.snapshot());
    expect(copy.match(h)).toEqual(index.match(h));
  });
});
