import { describe, expect, it } from "vitest";
import type { Leased, LeaseOrder } from "../../src/core/picking/pickers/lease";
import { leastLoaded } from "../../src/core/picking/pickers/least-loaded";
import { powerOfTwo } from "../../src/core/picking/pickers/power-of-two";
import { POLICIES, POLICY_NAMES, readsRequests, runPolicy } from "../../src/core/picking/policies";
import { weightedOrder as weighted } from "../../src/core/picking/weighted";
import type { RandomSource } from "../../src/lib/random";
import { cryptoRandom, uniformInt } from "../../src/lib/random";
import { pickInput, replica } from "../support/candidates";
import { scripted } from "../support/scripted-random";
import { CHI2_CRITICAL_1E4, missRate } from "../support/statistics";


function chiSquareUniform(observed: number[]): number {
  const total = observed.reduce((a, b) => a + b, 0);
  const expected = total / observed.length;
  return observed.reduce((sum, o) => sum + (o - expected) ** 2 / expected, 0);
}

/** Candidates from a compact spec: "id:weight:inflight". Frozen, so any mutation throws (modules are strict). */
function fleet(...specs: string[]): readonly Leased[] {
  return Object.freeze(
    specs.map((spec) => {
      const [id, weight, inflight] = spec.split(":");
      return Object.freeze({ id: id!, weight: Number(weight), inflight: Number(inflight) });
    }),
  );
}

const ids = (order: readonly Leased[]) => order.map((c) => c.id);
const ALL: ["weighted" | "least_loaded" | "power_of_two", LeaseOrder][] = [
  ["weighted", weighted],
  ["least_loaded", leastLoaded],
  ["power_of_two", powerOfTwo],
];

describe("registry", () => {
  it("names every policy, in the order the config lists them", () => {
    expect(POLICY_NAMES).toEqual(["weighted", "least_loaded", "power_of_two", "random", "round_robin", "gaie", "ray_prefix", "sglang_cache_aware", "switchyard"]);
  });

  it.each(ALL)("%s is its lease picker alone: the same order from the same draws", (name, policy) => {
    expect(POLICIES[name]).toEqual({ filters: [], scorers: null, guards: [], picker: name });
    const leased = fleet("a:1:5", "b:2:1", "c:1:1", "d:0:0", "e:1:3", "f:1:1");
    const candidates = leased.map((c) => replica(c.id, { weight: c.weight, inflight: c.inflight }));
    for (const draws of [[0, 0, 0, 0, 0], [4, 3, 2, 1, 0], [1, 2, 1, 0, 1]]) {
      const expected = scripted(draws);
      const random = scripted(draws);
      expect(runPolicy(name, pickInput({ candidates, random })).order).toEqual(ids(policy(leased, expected)));
      expect(random.used).toBe(expected.used);
    }
  });

  it("reads requests exactly for the policies whose profile has a plugin that sees the view", () => {
    const readers = POLICY_NAMES.filter(readsRequests);
    expect(readers).toEqual(["random", "round_robin", "gaie", "ray_prefix", "sglang_cache_aware", "switchyard"]);
  });
});

describe("all policies", () => {
  it.each(ALL)("%s excludes weight <= 0 even when it is the least loaded", (_, policy) => {
    const candidates = fleet("idle:0:0", "a:1:5", "negative:-1:0", "b:1:9");
    for (let run = 0; run < 50; run++) expect(ids(policy(candidates, cryptoRandom())).sort()).toEqual(["a", "b"]);
  });

  it.each(ALL)("%s returns [] for no eligible candidates, drawing nothing", (_, policy) => {
    expect(policy(fleet(), scripted([]))).toEqual([]);
    expect(policy(fleet("a:0:0"), scripted([]))).toEqual([]);
  });

  it.each(ALL)("%s returns a permutation of the eligible input and leaves the input alone", (_, policy) => {
    const random = cryptoRandom();
    for (let run = 0; run < 300; run++) {
      const size = uniformInt(random, 9); // 0..8 replicas
      const candidates = fleet(...Array.from({ length: size }, (_, k) => `r${k}:${uniformInt(random, 4)}:${uniformInt(random, 5)}`));
      const before = structuredClone(candidates);
      const order = policy(candidates, random);
      expect(ids(order).sort()).toEqual(ids(candidates.filter((c) => c.weight > 0)).sort());
      for (const c of order) expect(candidates).toContain(c); // same objects, not copies
      expect(candidates).toEqual(before);
    }
  });
});

describe("weighted", () => {
  it("is weightedOrder: in-flight counts play no part", () => {
    // Same draws as weightedOrder's own test: index 2 first, then index 1 of the rest.
    expect(ids(weighted(fleet("a:1:0", "b:1:0", "c:1:100"), scripted([2, 1])))).toEqual(["c", "b", "a"]);
  });
});

describe("least_loaded", () => {
  it("orders by in-flight per unit of weight and needs no draws without ties", () => {
    // a: 3/1 = 3, b: 4/2 = 2, c: 1/1 = 1, e: 2/4 = 0.5
    const random = scripted([]);
    expect(ids(leastLoaded(fleet("a:1:3", "b:2:4", "c:1:1", "d:0:0", "e:4:2"), random))).toEqual(["e", "c", "b", "a"]);
  });

  it("is plain least-in-flight with equal weights", () => {
    expect(ids(leastLoaded(fleet("a:1:7", "b:1:2", "c:1:4"), scripted([])))).toEqual(["b", "c", "a"]);
  });

  it("breaks ties with the injected source, weight-relative ties included", () => {
    // x: 1/1 and y: 2/2 tie at 1; z leads. One draw orders the tied pair (Fisher–Yates).
    const candidates = fleet("x:1:1", "y:2:2", "z:1:0");
    expect(ids(leastLoaded(candidates, scripted([0])))).toEqual(["z", "y", "x"]);
    expect(ids(leastLoaded(candidates, scripted([1])))).toEqual(["z", "x", "y"]);
  });

  it("shuffles a three-way tie: scripted", () => {
    const candidates = fleet("a:1:0", "b:1:0", "c:1:0");
    // i=2: swap with uniformInt(3); i=1: swap with uniformInt(2).
    expect(ids(leastLoaded(candidates, scripted([0, 0])))).toEqual(["b", "c", "a"]);
    expect(ids(leastLoaded(candidates, scripted([2, 1])))).toEqual(["a", "b", "c"]);
  });

  // 30,000 draws, false failure 1e-4 (chi-square, 2 df). A tie-break 5 points off for one
  // replica (0.383 instead of 1/3) passes with probability < 1e-40.
  it("spreads the first choice uniformly over tied replicas within a chi-square bound", () => {
    expect(missRate(30_000, 1 / 3, 1 / 3 + 0.05, CHI2_CRITICAL_1E4[2])).toBeLessThan(1e-40);
    const random = cryptoRandom();
    const candidates = fleet("a:1:2", "b:1:2", "c:1:2", "d:1:9");
    const counts = [0, 0, 0];
    const runs = 30_000;
    for (let run = 0; run < runs; run++) counts["abc".indexOf(leastLoaded(candidates, random)[0]!.id)]!++;
    expect(chiSquareUniform(counts)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });
});

describe("power_of_two", () => {
  it("picks the less loaded of the two drawn, never a third that is lighter still", () => {
    // i = 0 (a), j = uniformInt(3) = 0 -> shifted past i -> 1 (b). c (0 in flight) was not drawn.
    const random = scripted([0, 0]);
    expect(ids(powerOfTwo(fleet("a:1:5", "b:1:1", "c:1:0", "d:1:3"), random))).toEqual(["b", "a", "c", "d"]);
    expect(random.used).toBe(2); // rest had no ties: no further draws
  });

  it("draws two distinct replicas: j skips over i", () => {
    const candidates = fleet("a:1:0", "b:1:1", "c:1:2", "d:1:3");
    expect(ids(powerOfTwo(candidates, scripted([2, 2]))).slice(0, 2)).toEqual(["c", "d"]); // j 2 -> 3
    expect(ids(powerOfTwo(candidates, scripted([3, 2]))).slice(0, 2)).toEqual(["c", "d"]); // j 2 < i stays; c lighter
    expect(ids(powerOfTwo(candidates, scripted([3, 0]))).slice(0, 2)).toEqual(["a", "d"]);
  });

  it("keeps the first drawn first on a tie, then orders the rest with random ties", () => {
    // All equal: i = 2 (c), j = 0 (a); rest [b, d] tied, one draw of 1 keeps them in order.
    expect(ids(powerOfTwo(fleet("a:1:1", "b:1:1", "c:1:1", "d:1:1"), scripted([2, 0, 1])))).toEqual(["c", "a", "b", "d"]);
    expect(ids(powerOfTwo(fleet("a:1:1", "b:1:1", "c:1:1", "d:1:1"), scripted([2, 0, 0])))).toEqual(["c", "a", "d", "b"]);
  });

  it("orders the fallbacks after the pair by raw in-flight", () => {
    // Draws pick a and b; the rest sort as e(0), c(2), d(6) regardless of weight.
    expect(ids(powerOfTwo(fleet("a:1:4", "b:1:4", "c:9:2", "d:1:6", "e:1:0"), scripted([0, 0])))).toEqual(["a", "b", "e", "c", "d"]);
  });

  it("handles one and two eligible replicas", () => {
    expect(ids(powerOfTwo(fleet("a:0:0", "b:1:5"), scripted([])))).toEqual(["b"]);
    // n = 2: i = 1 (b), j = uniformInt(1) = 0 (a); a is lighter.
    expect(ids(powerOfTwo(fleet("a:1:0", "b:1:3"), scripted([1, 0])))).toEqual(["a", "b"]);
  });

  it("never puts the uniquely most loaded replica first", () => {
    const random = cryptoRandom();
    const candidates = fleet("a:1:1", "b:1:1", "c:1:8", "d:1:0");
    for (let run = 0; run < 500; run++) expect(powerOfTwo(candidates, random)[0]!.id).not.toBe("c");
  });

  // 50,000 draws, false failure 1e-4 (chi-square, 4 df). One replica 5 points off (0.25
  // instead of 0.2), or picks drawn by weight (c would get 0.5), pass with probability < 1e-100.
  it("picks uniformly among equally loaded replicas within a chi-square bound", () => {
    expect(missRate(50_000, 0.2, 0.25, CHI2_CRITICAL_1E4[4])).toBeLessThan(1e-100);
    const random = cryptoRandom();
    const candidates = fleet("a:1:3", "b:1:3", "c:5:3", "d:1:3", "e:2:3"); // weights do not bias the draw
    const counts = [0, 0, 0, 0, 0];
    const runs = 50_000;
    for (let run = 0; run < runs; run++) counts["abcde".indexOf(powerOfTwo(candidates, random)[0]!.id)]!++;
    expect(chiSquareUniform(counts)).toBeLessThan(CHI2_CRITICAL_1E4[4]);
  });
});

// A discrete-time queue model: each tick ARRIVALS requests are routed one by one (each
// sees the counts left by the previous), then every replica finishes up to its capacity.
const CAPACITY_PER_TICK = [5, 5, 5, 5, 1, 1, 1, 1]; // requests finished per tick; half the fleet is 5x slower
const ARRIVALS_PER_TICK = 12; // half of the 24/tick total, but 1.5/tick per replica under a uniform split: the slow half (1/tick) falls behind
const TICKS = 400; // slow queues under uniform random grow ~0.5/tick, so ~200 deep by the end

function simulate(policy: LeaseOrder, random: RandomSource): { peakMax: number; averageMean: number } {
  const inflight = CAPACITY_PER_TICK.map(() => 0);
  let peakMax = 0;
  let meanSum = 0;
  for (let tick = 0; tick < TICKS; tick++) {
    for (let arrival = 0; arrival < ARRIVALS_PER_TICK; arrival++) {
      const candidates = inflight.map((count, k) => ({ id: String(k), weight: 1, inflight: count }));
      inflight[Number(policy(candidates, random)[0]!.id)]!++;
    }
    peakMax = Math.max(peakMax, ...inflight);
    meanSum += inflight.reduce((a, b) => a + b, 0) / inflight.length;
    inflight.forEach((count, k) => (inflight[k] = Math.max(0, count - CAPACITY_PER_TICK[k]!)));
  }
  return { peakMax, averageMean: meanSum / TICKS };
}

describe("power_of_two under skewed service times", () => {
  it("keeps peak and mean in-flight far below uniform random", () => {
    const random = cryptoRandom();
    const uniform = simulate(weighted, random); // equal weights: a uniform random first choice
    const p2c = simulate(powerOfTwo, random);
    // Observed: uniform ~210-270 peak / ~50 mean; P2C ~5 peak / ~2.3 mean. 4x is a generous margin.
    const MARGIN = 4;
    expect(p2c.peakMax * MARGIN).toBeLessThan(uniform.peakMax);
    expect(p2c.averageMean * MARGIN).toBeLessThan(uniform.averageMean);
  });
});
