import { describe, expect, it } from "vitest";
import { PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import type { RandomSource } from "../../src/lib/random";
import { runPolicy } from "../../src/core/picking/policies";
import { DEFAULT_SETTINGS, scoringSettings } from "../../src/core/picking/scoring/settings";
import type { Candidate, PickInput, PickResult } from "../../src/core/picking/scoring/types";
import { features, hashes, NOW, pickInput, replica } from "../support/candidates";
import { scripted } from "../support/scripted-random";
import { seeded } from "../support/seeded-random";

const switchyardPolicy = (input: PickInput) => runPolicy("switchyard", input);
const leastLoadedPolicy = (input: PickInput) => runPolicy("least_loaded", input);
const STALE = NOW - DEFAULT_SETTINGS.stalenessMs - 1;
const REQUEST = features({ hashes: hashes(8) });

function warmIndex(holdings: Record<string, number>): PrefixIndex {
  const index = new PrefixIndex(1_000);
  for (const [id, blocks] of Object.entries(holdings)) index.add(id, hashes(blocks));
  return index;
}

function pick(candidates: Candidate[], random: RandomSource, fields: Partial<PickInput> = {}) {
  return switchyardPolicy(pickInput({ candidates, random, ...fields }));
}

describe("switchyard: scripted picks", () => {
  it("sends a cold request by two choices on the load score, not to the least loaded", () => {
    // Draws a and b: b wins the pair though c is lighter than a; then c, then a.
    const fleet = [replica("a", { inflight: 3 }), replica("b", { inflight: 0 }), replica("c", { inflight: 1 })];
    const random = scripted([0, 0]);
    expect(pick(fleet, random)).toMatchObject({ order: ["b", "c", "a"], reason: "cold", insert: null });
    expect(random.used).toBe(2);
  });

  it("follows the prefix to its holder while the holder is under the busy cap, even past idle replicas", () => {
    // Σ in flight 1: fair share 2/3, cap max(1, 0.83) = 1, so h (1 in flight) keeps affinity.
    const fleet = [replica("x"), replica("h", { inflight: 1 }), replica("y")];
    const result = pick(fleet, scripted([0]), { index: warmIndex({ h: 8 }), request: REQUEST });
    expect(result).toMatchObject({ order: ["h", "y", "x"], reason: "prefix", insert: { replica: "h", hashes: hashes(8) } });
  });

  it("with no room anywhere, keeps the holder when the TTFT model predicts it answers before a cold replica; spills when it does not", () => {
    // Cap 1 × fair share, no floor: Σ 18 over three, fair 19/3 ≈ 6.3, and every replica at 6 would pass it with one more.
    const tight = scoringSettings({ switchyard: { busyLoadFactor: 1, busyFloor: 0 } });
    const fleet = [replica("h", { inflight: 6 }), replica("x", { inflight: 6 }), replica("y", { inflight: 6 })];
    const at = { index: warmIndex({ h: 8 }), request: REQUEST, settings: tight };
    const soonAtHome = (id: string) => (id === "h" ? 40 : 150); // queueing < a cold prefill
    const first = (predictTtftMs: PickInput["predictTtftMs"]) => {
      const { order, reason } = pick(fleet, seeded(1), { ...at, predictTtftMs });
      return { first: order[0], reason };
    };
    expect(first(soonAtHome)).toEqual({ first: "h", reason: "prefix_predicted" });
    const soonerAway = (id: string) => (id === "h" ? 400 : 150);
    expect(first(soonerAway)).toMatchObject({ reason: "prefix_capped" });
    const learning = () => null; // no model yet: the cap decides
    expect(first(learning)).toMatchObject({ reason: "prefix_capped" });
  });

  it("never keeps a holder past its cap while another replica has room, whatever the TTFT model predicts", () => {
    // Cap 1.25 × fair: Σ 3, fair 4/3, cap max(2, 1.67) = 2 < 4 for h; x and y have room.
    const fleet = [replica("h", { inflight: 3 }), replica("x"), replica("y")];
    const settings = scoringSettings({ switchyard: { busyLoadFactor: 1.25 } });
    const soonAtHome = (id: string) => (id === "h" ? 40 : 150);
    const result = pick(fleet, scripted([0, 0]), { index: warmIndex({ h: 8 }), request: REQUEST, settings, predictTtftMs: soonAtHome });
    expect(result.reason).toBe("prefix_capped");
    expect(result.order[0]).not.toBe("h");
    expect(result.order[2]).toBe("h"); // the replica without room last
  });

  it("lists the replicas that also hold the prefix right after the choice", () => {
    // h1 chosen (longest match); h2 (half the prefix) outranks the idle cold replica: 8.5 to 7.
    const fleet = [replica("cold"), replica("h2"), replica("h1", { inflight: 1 })];
    expect(pick(fleet, scripted([]), { index: warmIndex({ h1: 8, h2: 4 }), request: REQUEST }).order).toEqual(["h1", "h2", "cold"]);
  });

  it("drops affinity past the busy cap and routes by load: the overflow warms another replica", () => {
    // Cap 2 × fair: Σ = 4, fair share 5 / 3, cap 3.33 < 4 + 1. Draws x and y among those with room: x wins the tie; then y, then h.
    const fleet = [replica("h", { inflight: 4 }), replica("x"), replica("y")];
    const settings = scoringSettings({ switchyard: { busyLoadFactor: 2 } });
    const random = scripted([0, 0]);
    expect(pick(fleet, random, { index: warmIndex({ h: 8 }), request: REQUEST, settings })).toMatchObject({ order: ["x", "y", "h"], reason: "prefix_capped", insert: { replica: "x" } });
  });

  it("ignores the prefix when in-flight per unit of weight is more than 32 apart and 1.5×", () => {
    const fleet = [replica("busy", { inflight: 40 }), replica("warm", { inflight: 5 }), replica("idle")];
    // Draws warm and idle: idle wins, though warm holds the whole prefix and is under its cap.
    const result = pick(fleet, scripted([1, 1]), { index: warmIndex({ warm: 8 }), request: REQUEST });
    expect(result).toMatchObject({ order: ["idle", "warm", "busy"], reason: "imbalanced" });
    // 32 apart is not past the guard: the prefix holds.
    const near = [replica("busy", { inflight: 32 }), replica("warm", { inflight: 5 }), replica("idle")];
    expect(pick(near, scripted([]), { index: warmIndex({ warm: 8 }), request: REQUEST })).toMatchObject({ order: ["warm", "idle", "busy"], reason: "prefix" });
  });

  it("treats a match under 10% of the request as cold", () => {
    const long = features({ hashes: hashes(50) }); // 4 of 50 blocks: 8%
    const fleet = [replica("warm", { inflight: 1 }), replica("idle")];
    expect(pick(fleet, scripted([0, 0]), { index: warmIndex({ warm: 4 }), request: long }).reason).toBe("cold");
    const ten = features({ hashes: hashes(40) }); // 4 of 40: 10%, enough
    expect(pick(fleet, scripted([]), { index: warmIndex({ warm: 4 }), request: ten })).toMatchObject({ order: ["warm", "idle"], reason: "prefix" });
  });

  it("treats a match of fewer than 4 blocks as cold, however large its share: a short common preamble is not affinity", () => {
    const short = features({ hashes: hashes(6) });
    const fleet = [replica("warm", { inflight: 1 }), replica("idle")];
    expect(pick(fleet, scripted([0, 0]), { index: warmIndex({ warm: 3 }), request: short }).reason).toBe("cold"); // 3 of 6: 50%, too short
    expect(pick(fleet, scripted([0, 0]), { index: warmIndex({ warm: 4 }), request: short })).toMatchObject({ order: ["warm", "idle"], reason: "prefix" });
  });

  it("with every replica's metrics stale, ranks by in-flight with two choices and ignores the old readings", () => {
    const old = { sampledAt: STALE };
    const fleet = [
      replica("a", { inflight: 2, metrics: { ...old, waiting: 0, kvUsage: 0 } }),
      replica("b", { inflight: 1, metrics: { ...old, waiting: 30, kvUsage: 0.99 } }),
      replica("c", { inflight: 2, metrics: null }),
      replica("d", { inflight: 6, metrics: old }),
    ];
    // Σ 11 in flight, fair share with this request 3: a, b and c are within it, d is not.
    // Draws a and b: b (1 in flight) wins; its old full queue neither filters nor sinks it.
    const result = pick(fleet, scripted([0, 0, 0]));
    expect(result).toMatchObject({ reason: "cold" });
    expect(result.order[0]).toBe("b");
    expect(result.order.at(-1)).toBe("d");
  });

  it("sends a cold request within its fair share whatever the draw: a cohort of cold requests spreads evenly", () => {
    // Σ 11 in flight: fair share with this request 3, so only d (2) stays within it. Two
    // choices over everyone would draw d in only half the pairs.
    const fleet = [replica("a", { inflight: 3 }), replica("b", { inflight: 3 }), replica("c", { inflight: 3 }), replica("d", { inflight: 2 })];
    for (const draws of [[0, 0], [1, 1], [2, 0], [3, 2]]) {
      const result = pick(fleet, scripted([...draws, 0, 0, 0, 0]));
      expect(result.order[0], JSON.stringify(draws)).toBe("d");
      expect(result.reason).toBe("cold");
    }
    // Twelve cold requests, nothing finishing, one isolate: 3 on every replica.
    const counts = [0, 0, 0, 0];
    const random = seeded(7);
    for (let r = 0; r < 12; r++) {
      const result = pick(counts.map((n, k) => replica(`r${k}`, { inflight: n })), random);
      counts[Number(result.order[0]!.slice(1))]!++;
    }
    expect(counts).toEqual([3, 3, 3, 3]);
  });

  it("puts filtered replicas last: a saturated prefix holder, a replica that cannot load the adapter", () => {
    const fleet = [replica("sat-warm", { metrics: { waiting: 5 } }), replica("b", { inflight: 2 }), replica("c", { inflight: 1 })];
    // Kept: b and c, neither holds the prefix: cold. Draws b and c: c wins.
    expect(pick(fleet, scripted([0, 0]), { index: warmIndex({ "sat-warm": 8 }), request: REQUEST })).toMatchObject({ order: ["c", "b", "sat-warm"], reason: "cold" });
    const lora = [replica("full", { metrics: { loraRunning: ["x"], maxLora: 1 } }), replica("has", { inflight: 4, metrics: { loraRunning: ["sql"], maxLora: 1 } })];
    expect(pick(lora, scripted([]), { request: features({ adapter: "sql" }) }).order).toEqual(["has", "full"]);
  });
});

/** Route `requests` requests that share one long prefix (plus a unique last block); nothing completes. */
function sharedPrefixRun(settings: PickInput["settings"], replicas: number, requests: number, random: RandomSource, metricsAt: number): number[] {
  const inflight = Array<number>(replicas).fill(0);
  const index = new PrefixIndex(10_000);
  const prefix = hashes(200);
  for (let r = 0; r < requests; r++) {
    const candidates = inflight.map((n, k) => replica(`r${k}`, { inflight: n, metrics: { sampledAt: metricsAt } }));
    const result = switchyardPolicy(pickInput({ candidates, index, settings, random, request: features({ hashes: [...prefix, 1_000_000 + r] }) }));
    index.add(result.insert!.replica, result.insert!.hashes);
    inflight[Number(result.order[0]!.slice(1))]!++;
  }
  return inflight;
}

const maxOverMean = (loads: number[]) => Math.max(...loads) / (loads.reduce((a, b) => a + b, 0) / loads.length);

describe("switchyard: one huge common prefix", () => {
  const NO_GUARDS = scoringSettings({ switchyard: { busyLoadFactor: Number.POSITIVE_INFINITY, busyFloor: Number.POSITIVE_INFINITY, balanceAbs: Number.POSITIVE_INFINITY } });
  const CAP_ONLY = scoringSettings({ switchyard: { balanceAbs: Number.POSITIVE_INFINITY } });
  const CAP_125 = scoringSettings({ switchyard: { balanceAbs: Number.POSITIVE_INFINITY, busyLoadFactor: 1.25 } });

  it("without the busy cap and balance guard, herds every request onto one replica", () => {
    const loads = sharedPrefixRun(NO_GUARDS, 8, 400, seeded(1), NOW);
    expect(Math.max(...loads)).toBe(400);
  });

  it.each([
    ["fresh", NOW],
    ["stale", STALE],
  ])("with the busy cap alone and %s metrics, keeps every replica within 1.25× its fair share (+1)", (_, metricsAt) => {
    // Observed: 58 on the busiest of 8 against a mean of 50 (1.16×) for each seed.
    for (const seed of [1, 2, 3]) {
      const loads = sharedPrefixRun(CAP_125, 8, 400, seeded(seed), metricsAt);
      expect(Math.max(...loads)).toBeLessThanOrEqual(1.25 * ((400 - 1 + 1) / 8) + 1);
      expect(maxOverMean(loads)).toBeLessThan(1.3);
    }
  });
});

/**
 * Many isolates routing on the same delayed in-flight counts: each batch of BATCH requests
 * sees one snapshot (counts at the batch's start), then every replica finishes up to
 * DRAIN requests. Returns, averaged over the batches, the most requests of a batch that
 * went to a single replica.
 */
function meanLargestBatchShare(policy: (input: PickInput) => PickResult, random: RandomSource): number {
  const REPLICAS = 8;
  const BATCH = 16; // requests routed on one snapshot
  const DRAIN = 2; // requests each replica finishes between snapshots: capacity = arrivals
  const BATCHES = 200;
  const inflight = Array<number>(REPLICAS).fill(0);
  let largestSum = 0;
  for (let batch = 0; batch < BATCHES; batch++) {
    const candidates = inflight.map((n, k) => replica(`r${k}`, { inflight: n, metrics: null }));
    const sent = Array<number>(REPLICAS).fill(0);
    for (let r = 0; r < BATCH; r++) sent[Number(policy(pickInput({ candidates, random })).order[0]!.slice(1))]!++;
    largestSum += Math.max(...sent);
    sent.forEach((n, k) => (inflight[k] = Math.max(0, inflight[k]! + n - DRAIN)));
  }
  return largestSum / BATCHES;
}

describe("switchyard: stale metrics and delayed counts", () => {
  // Two choices sends a request to a replica only if it is one of the two drawn: at most
  // 1/4 of a batch in expectation with 8 replicas (4 of 16), whatever the snapshot says.
  // Least loaded sends a whole batch to the snapshot's minimum whenever it is unique.
  // Observed: least loaded 13.7-14.4 of 16, switchyard 5.1-5.4 (seeded, so fixed per seed).
  it("does not herd where least loaded does", () => {
    expect(meanLargestBatchShare(leastLoadedPolicy, seeded(7))).toBeGreaterThan(12);
    for (const seed of [1, 2, 3]) expect(meanLargestBatchShare(switchyardPolicy, seeded(seed))).toBeLessThan(8);
  });
});
