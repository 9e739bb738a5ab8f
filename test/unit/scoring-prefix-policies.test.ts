import { describe, expect, it } from "vitest";
import { powerOfTwo } from "../../src/core/picking/pickers/power-of-two";
import { longestMatch, smallestTrees, thenTheRest } from "../../src/core/picking/pickers/prefix-match";
import { runPolicy } from "../../src/core/picking/policies";
import { PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import { scoringSettings } from "../../src/core/picking/scoring/settings";
import type { Candidate, PickInput } from "../../src/core/picking/scoring/types";
import { features, hashes, pickInput, replica } from "../support/candidates";
import { scripted } from "../support/scripted-random";

const ids = (cs: readonly Candidate[]) => cs.map((c) => c.id);
const rayPolicy = (input: PickInput) => runPolicy("ray_prefix", input);
const sglangPolicy = (input: PickInput) => runPolicy("sglang_cache_aware", input);

/** An index where each replica holds the first n blocks of `hashes(total)`, or `other` unrelated blocks. */
function indexOf(holdings: Record<string, number | { other: number }>): PrefixIndex {
  const index = new PrefixIndex(1_000);
  for (const [id, held] of Object.entries(holdings)) index.add(id, typeof held === "number" ? hashes(held) : hashes(held.other, 10_000));
  return index;
}

describe("prefix-match helpers", () => {
  const fleet = [replica("a"), replica("b"), replica("c"), replica("d")];

  it("longestMatch returns the deepest match and every replica holding it", () => {
    expect(longestMatch(fleet, new Map([["a", 3], ["b", 5], ["d", 5]]))).toEqual({ best: 5, holders: [fleet[1], fleet[3]] });
    expect(longestMatch(fleet, new Map())).toEqual({ best: 0, holders: [] });
    expect(longestMatch([fleet[0]!], new Map([["b", 5]]))).toEqual({ best: 0, holders: [] }); // only candidates count
  });

  it("smallestTrees returns the candidates with the fewest indexed blocks, unknown replicas holding 0", () => {
    expect(ids(smallestTrees(fleet, indexOf({ a: 4, b: 2, c: 2, d: 9 })))).toEqual(["b", "c"]);
    expect(ids(smallestTrees(fleet, indexOf({ a: 4, b: 2 })))).toEqual(["c", "d"]);
    expect(smallestTrees([], indexOf({}))).toEqual([]);
  });

  it("thenTheRest puts the first group first and every other candidate once, in order", () => {
    expect(ids(thenTheRest([fleet[2]!, fleet[0]!], fleet))).toEqual(["c", "a", "b", "d"]);
  });
});

describe("Ray PrefixCacheAffinityRouter", () => {
  const request = features({ hashes: hashes(10) });

  it("routes by power of two, prefix ignored, once max − min in-flight exceeds 10", () => {
    const fleet = [replica("warm", { inflight: 11 }), replica("x", { inflight: 0 }), replica("y", { inflight: 4 })];
    const input = pickInput({ candidates: fleet, index: indexOf({ warm: 10 }), request, random: scripted([0, 1]) });
    const result = rayPolicy(input);
    expect(result.reason).toBe("imbalanced");
    expect(result.order).toEqual(powerOfTwo(fleet, scripted([0, 1])).map((c) => c.id)); // warm and y drawn: y
    expect(result.order[0]).toBe("y");
  });

  it("follows the prefix at exactly 10 apart, to the least loaded of the replicas with the longest match", () => {
    const fleet = [replica("warm-busy", { inflight: 10 }), replica("warm", { inflight: 3 }), replica("half", { inflight: 1 }), replica("cold", { inflight: 0 })];
    const input = pickInput({ candidates: fleet, index: indexOf({ "warm-busy": 10, warm: 10, half: 5 }), request, random: scripted([]) });
    expect(rayPolicy(input)).toMatchObject({ order: ["warm", "warm-busy", "cold", "half"], reason: "prefix" });
  });

  it("follows a match of exactly 10% of the request (threshold 0.1)", () => {
    const fleet = [replica("warm", { inflight: 5 }), replica("cold")];
    const input = pickInput({ candidates: fleet, index: indexOf({ warm: 1, cold: { other: 3 } }), request, random: scripted([]) });
    expect(rayPolicy(input)).toMatchObject({ order: ["warm", "cold"], reason: "prefix" });
  });

  it("below 10%, sends the request to the smallest tree, least loaded first among equals", () => {
    const long = features({ hashes: hashes(20) }); // warm holds 1 of 20 blocks: 5%
    const fleet = [replica("warm", { inflight: 0 }), replica("big", { inflight: 1 }), replica("empty-busy", { inflight: 6 }), replica("empty", { inflight: 2 })];
    const input = pickInput({ candidates: fleet, index: indexOf({ warm: 1, big: { other: 50 } }), request: long, random: scripted([]) });
    // Smallest trees: the two empty ones (0 blocks), by in-flight; then the rest by in-flight.
    expect(rayPolicy(input)).toMatchObject({ order: ["empty", "empty-busy", "warm", "big"], reason: "smallest_tree" });
  });

  it("breaks in-flight ties with the injected source", () => {
    const fleet = [replica("w1", { inflight: 2 }), replica("w2", { inflight: 2 })];
    const input = (draw: number) => pickInput({ candidates: fleet, index: indexOf({ w1: 10, w2: 10 }), request, random: scripted([draw, draw]) });
    expect(rayPolicy(input(0)).order).toEqual(["w2", "w1"]);
    expect(rayPolicy(input(1)).order).toEqual(["w1", "w2"]);
  });
});

describe("SGLang cache_aware", () => {
  const request = features({ hashes: hashes(10) });

  it("routes to the least loaded, prefix ignored, past 64 apart and 1.5×", () => {
    const fleet = [replica("warm", { inflight: 65 }), replica("mid", { inflight: 30 }), replica("idle", { inflight: 0 })];
    const input = pickInput({ candidates: fleet, index: indexOf({ warm: 10 }), request, random: scripted([]) });
    expect(sglangPolicy(input)).toMatchObject({ order: ["idle", "mid", "warm"], reason: "imbalanced" });
  });

  it("stays with the prefix at exactly 64 apart", () => {
    const fleet = [replica("warm", { inflight: 64 }), replica("idle", { inflight: 0 })];
    const input = pickInput({ candidates: fleet, index: indexOf({ warm: 10 }), request, random: scripted([]) });
    expect(sglangPolicy(input)).toMatchObject({ order: ["warm", "idle"], reason: "prefix" });
  });

  it("needs a match strictly above 30%: 4 of 10 blocks follows it, 3 of 10 is a miss", () => {
    const fleet = [replica("warm"), replica("empty", { inflight: 1 })];
    const at = (held: number) => pickInput({ candidates: fleet, index: indexOf({ warm: held }), request, random: scripted([]) });
    expect(sglangPolicy(at(4))).toMatchObject({ order: ["warm", "empty"], reason: "prefix" });
    expect(sglangPolicy(at(3))).toMatchObject({ order: ["empty", "warm"], reason: "smallest_tree" });
  });

  it("sends a miss to the smallest tree even when it is the busiest (the death spiral); onMiss min_load fixes it", () => {
    const fleet = [replica("full", { inflight: 0 }), replica("busy-unique", { inflight: 40 }), replica("mid", { inflight: 5 })];
    const index = indexOf({ full: { other: 900 }, "busy-unique": { other: 3 }, mid: { other: 200 } });
    const miss = features({ hashes: hashes(10, 50_000) });
    expect(sglangPolicy(pickInput({ candidates: fleet, index, request: miss, random: scripted([]) }))).toMatchObject({ order: ["busy-unique", "full", "mid"], reason: "smallest_tree" });
    const settings = scoringSettings({ sglang: { onMiss: "min_load" } });
    expect(sglangPolicy(pickInput({ candidates: fleet, index, request: miss, settings, random: scripted([]) }))).toMatchObject({ order: ["full", "mid", "busy-unique"], reason: "cold" });
  });

  it("picks among equally deep holders with the injected source, not by load", () => {
    const fleet = [replica("w1", { inflight: 0 }), replica("w2", { inflight: 9 }), replica("cold", { inflight: 1 })];
    const input = (draw: number) => pickInput({ candidates: fleet, index: indexOf({ w1: 10, w2: 10 }), request, random: scripted([draw]) });
    expect(sglangPolicy(input(1))).toMatchObject({ order: ["w2", "w1", "cold"], reason: "prefix" });
    expect(sglangPolicy(input(0)).order).toEqual(["w1", "cold", "w2"]);
  });
});
