import { describe, expect, it } from "vitest";
import { PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import { cryptoRandom } from "../../src/lib/random";
import type { Profile } from "../../src/core/picking/profile";
import { eligibleCandidates, profileOrder, scoringContext } from "../../src/core/picking/profile";
import { scoreTotals, staleStandIn } from "../../src/core/picking/scorers/totals";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import type { Candidate, PickInput } from "../../src/core/picking/scoring/types";
import { features, hashes, NOW, pickInput, replica } from "../support/candidates";
import { scripted } from "../support/scripted-random";

const STALE = NOW - DEFAULT_SETTINGS.stalenessMs - 1;
const GAIE = DEFAULT_SETTINGS.gaie.weights;
const ids = (cs: readonly Candidate[]) => cs.map((c) => c.id);

/** GAIE's profile, with or without switchyard's filters: the whole weighted pipeline. */
const NO_FILTERS: Profile = { filters: [], scorers: "gaie", guards: ["stale_metrics"], picker: "max_score" };
const ALL_FILTERS: Profile = { ...NO_FILTERS, filters: ["lora", "saturation"] };
const runPipeline = (input: PickInput, profile: Profile) => profileOrder(profile, input);

describe("eligibleCandidates", () => {
  it("drops drained replicas: weight 0, negative or NaN", () => {
    const fleet = [replica("a"), replica("zero", { weight: 0 }), replica("neg", { weight: -1 }), replica("nan", { weight: Number.NaN }), replica("b", { weight: 0.5 })];
    expect(ids(eligibleCandidates(fleet))).toEqual(["a", "b"]);
  });
});

describe("staleStandIn", () => {
  it("replaces null with the fresh mean, or with the in-flight score when that is lower", () => {
    expect(staleStandIn([0.5, null, 0.9], [1, 1, 1])).toEqual([0.5, 0.7, 0.9]);
    expect(staleStandIn([0.5, null, 0.9], [1, 0.25, 1])).toEqual([0.5, 0.25, 0.9]);
  });

  it("takes the mean of clamped scores, and the in-flight score alone when nothing is fresh", () => {
    expect(staleStandIn([2, null, 0], [1, 1, 1])).toEqual([2, 0.5, 0]);
    expect(staleStandIn([null, null], [0.3, 1])).toEqual([0.3, 1]);
    expect(staleStandIn([], [])).toEqual([]);
  });
});

describe("scoreTotals and staleness", () => {
  const totals = (fleet: Candidate[]) => {
    const input = pickInput({ candidates: fleet, random: scripted([]) });
    return scoreTotals(scoringContext(fleet, input, new Map()), GAIE);
  };

  it("never favours a stale replica: an idle one whose old scrape showed an empty engine ties with fresh idle peers", () => {
    const fleet = [replica("a", { metrics: { kvUsage: 0.5 } }), replica("b", { metrics: { kvUsage: 0.5 } }), replica("old", { metrics: { waiting: 0, kvUsage: 0, sampledAt: STALE } })];
    expect(totals(fleet)).toEqual([3, 3, 3]); // queue 2·1 + kv 2·0.5 each; the old reading (kv 0) is not used
  });

  it("never shuns a stale replica for an old full reading, but ranks it down by its leases", () => {
    const idle = [replica("a", { metrics: { kvUsage: 0.5 } }), replica("old", { metrics: { waiting: 40, kvUsage: 1, sampledAt: STALE } })];
    expect(totals(idle)).toEqual([3, 3]);
    const busy = [replica("a", { metrics: { kvUsage: 0.5 } }), replica("old", { inflight: 8, metrics: null })];
    expect(totals(busy)).toEqual([3, 0]); // in-flight score 0: the busiest
  });
});

describe("a weighted profile (filters, scorers, the stale guard, max score)", () => {
  it("returns nothing for an empty or fully drained fleet, drawing nothing", () => {
    expect(runPipeline(pickInput({ random: scripted([]) }), ALL_FILTERS)).toEqual({ order: [], reason: "none" });
    const drained = [replica("a", { weight: 0 })];
    expect(runPipeline(pickInput({ candidates: drained, random: scripted([]) }), ALL_FILTERS)).toEqual({ order: [], reason: "none" });
  });

  it("orders by weighted score, highest first: prefix 3 outweighs a longer queue (2) but not a longer queue and a fuller cache", () => {
    const index = new PrefixIndex(100);
    index.add("warm", hashes(4));
    const request = features({ hashes: hashes(4) });
    // warm: 3·1 + 2·0 + 2·1 = 5; cold: 0 + 2·1 + 2·1 = 4.
    const fleet = [replica("cold"), replica("warm", { metrics: { waiting: 3 } })];
    const first = runPipeline(pickInput({ candidates: fleet, index, request, random: scripted([]) }), NO_FILTERS);
    expect(first).toEqual({ order: [fleet[1], fleet[0]], reason: "scored" });
    // warm with kv 0.6: 3 + 0 + 0.8 = 3.8 < 4.
    const full = [replica("cold"), replica("warm", { metrics: { waiting: 3, kvUsage: 0.6 } })];
    expect(ids(runPipeline(pickInput({ candidates: full, index, request, random: scripted([]) }), NO_FILTERS).order)).toEqual(["cold", "warm"]);
  });

  it("with every survivor stale, routes by in-flight with two choices, not to the least loaded, and ignores the old readings", () => {
    const old = { sampledAt: STALE };
    const fleet = [
      replica("a", { inflight: 5, metrics: { ...old, waiting: 0 } }),
      replica("b", { inflight: 1, metrics: { ...old, waiting: 30 } }),
      replica("c", { inflight: 0, metrics: null }),
      replica("d", { inflight: 3, metrics: old }),
    ];
    // Draws: i = 0 (a), j = 0 → 1 (b): b wins the pair; c, the least loaded, was not drawn.
    const random = scripted([0, 0]);
    expect(runPipeline(pickInput({ candidates: fleet, random }), ALL_FILTERS)).toEqual({ order: [fleet[1], fleet[2], fleet[3], fleet[0]], reason: "stale" });
    expect(random.used).toBe(2);
  });

  it("never puts the most loaded stale replica first, and spreads picks when stale counts are equal", () => {
    const random = cryptoRandom();
    const fleet = ["a", "b", "c", "d"].map((id) => replica(id, { inflight: id === "d" ? 9 : 2, metrics: null }));
    const firsts = new Set<string>();
    for (let run = 0; run < 300; run++) {
      const { order, reason } = runPipeline(pickInput({ candidates: fleet, random }), NO_FILTERS);
      expect(reason).toBe("stale");
      expect(order[0]!.id).not.toBe("d");
      firsts.add(order[0]!.id);
    }
    expect([...firsts].sort()).toEqual(["a", "b", "c"]); // each misses 300 times with p = (2/3)^300 < 1e-52
  });

  it("appends replicas the filters removed as last-resort fallbacks, least loaded first", () => {
    const fleet = [
      replica("sat-idle", { inflight: 0, metrics: { waiting: 9 } }),
      replica("sat-busy", { inflight: 3, metrics: { kvUsage: 0.9 } }),
      replica("ok-1", { inflight: 1 }),
      replica("ok-2", { inflight: 2 }),
      replica("drained", { weight: 0 }),
    ];
    // ok-1 and ok-2 tie (GAIE weighs no in-flight): one draw of 0 swaps them.
    const { order, reason } = runPipeline(pickInput({ candidates: fleet, random: scripted([0]) }), ALL_FILTERS);
    expect(reason).toBe("scored");
    expect(ids(order)).toEqual(["ok-2", "ok-1", "sat-idle", "sat-busy"]);
  });

  it("fails open when every replica is saturated, and never counts a stale replica saturated", () => {
    const all = [replica("a", { metrics: { waiting: 9 } }), replica("b", { metrics: { kvUsage: 0.95 } })];
    const open = runPipeline(pickInput({ candidates: all, random: scripted([]) }), ALL_FILTERS);
    expect(ids(open.order)).toEqual(["b", "a"]); // both kept: b = queue 2·1 + kv 2·0.05 = 2.1, a = 0 + 2·1 = 2
    const stale = [replica("fresh", { metrics: { waiting: 9 } }), replica("old", { metrics: { waiting: 9, sampledAt: STALE } })];
    expect(ids(runPipeline(pickInput({ candidates: stale, random: scripted([]) }), ALL_FILTERS).order)).toEqual(["old", "fresh"]);
  });
});
