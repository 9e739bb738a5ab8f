import { describe, expect, it } from "vitest";
import { blockHashes, hashSeed } from "../../src/core/picking/prefix/block-hashes";
import type { PrefixInsert } from "../../src/core/picking/prefix/prefix-index";
import { DEFAULT_LRU_CAPACITY_BLOCKS, PrefixIndex } from "../../src/core/picking/prefix/prefix-index";

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
