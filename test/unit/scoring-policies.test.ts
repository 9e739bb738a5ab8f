import { describe, expect, it } from "vitest";
import { powerOfTwo } from "../../src/core/picking/pickers/power-of-two";
import type { PolicyName } from "../../src/core/picking/policies";
import { POLICY_NAMES, runPolicy } from "../../src/core/picking/policies";
import { PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import type { RandomSource } from "../../src/lib/random";
import { cryptoRandom, uniformFloat, uniformInt } from "../../src/lib/random";
import { DEFAULT_SETTINGS, scoringSettings } from "../../src/core/picking/scoring/settings";
import type { PickInput, PickResult } from "../../src/core/picking/scoring/types";
import { INITIAL_PICKER_STATE } from "../../src/core/picking/scoring/types";
import { features, hashes, NOW, pickInput, replica } from "../support/candidates";
import { scripted } from "../support/scripted-random";
import { chiSquare, CHI2_CRITICAL_1E4, missRate } from "../support/statistics";

const policy = (name: PolicyName) => (input: PickInput): PickResult => runPolicy(name, input);
const randomPolicy = policy("random");
const roundRobin = policy("round_robin");
const p2c = policy("power_of_two");
const leastLoaded = policy("least_loaded");
const gaie = policy("gaie");
const ALL = POLICY_NAMES.map((name) => [name, policy(name)] as const);
const STALE = NOW - DEFAULT_SETTINGS.stalenessMs - 1;

const LOCATIONS: readonly Record<string, string>[] = [{}, { colo: "AMS" }, { region: "weur" }];

/** A random fleet, request and index: drained, stale, saturated, LoRA and prefix cases all occur. */
function randomInput(random: RandomSource): PickInput & { index: PrefixIndex } {
  const pick = <T>(xs: readonly T[]) => xs[uniformInt(random, xs.length)]!;
  const size = uniformInt(random, 8);
  const candidates = Array.from({ length: size }, (_, k) =>
    replica(`r${k}`, {
      weight: pick([-1, 0, Number.NaN, 0.5, 1, 1, 2, 3]),
      inflight: uniformInt(random, 80),
      labels: pick(LOCATIONS),
      metrics: pick([
        null,
        { sampledAt: STALE, waiting: 9 },
        { waiting: uniformInt(random, 8), kvUsage: uniformFloat(random), loraRunning: pick([[], ["sql"]]), maxLora: pick([0, 1, 2]) },
      ]),
    }),
  );
  const index = new PrefixIndex(64);
  for (const c of candidates) if (uniformInt(random, 2) === 0) index.add(c.id, hashes(1 + uniformInt(random, 12), pick([1, 100])));
  const request = features({ hashes: hashes(uniformInt(random, 10)), adapter: pick([null, "sql"]), locality: pick(LOCATIONS) });
  return { ...pickInput({ candidates, request, random, state: { roundRobinCursor: uniformInt(random, 10) } }), index };
}

describe("every policy", () => {
  it.each(ALL)("%s returns every eligible replica exactly once, never a drained one, and leaves its input alone", (_, policy) => {
    const random = cryptoRandom();
    for (let run = 0; run < 400; run++) {
      const input = randomInput(random);
      const before = JSON.stringify(input.index.snapshot());
      const result = policy(input);
      const eligible = input.candidates.filter((c) => c.weight > 0).map((c) => c.id);
      expect([...result.order].sort()).toEqual([...eligible].sort());
      expect(result.reason === "none").toBe(eligible.length === 0);
      const expectedInsert = result.order.length > 0 && input.request.hashes.length > 0 ? { replica: result.order[0], hashes: input.request.hashes } : null;
      expect(result.insert).toEqual(expectedInsert);
      expect(JSON.stringify(input.index.snapshot())).toBe(before); // the index is read, never written
    }
  });

  it.each(ALL)("%s answers an empty or fully drained fleet with nothing, drawing nothing", (_, policy) => {
    for (const candidates of [[], [replica("a", { weight: 0 }), replica("b", { weight: -2 })]]) {
      const result = policy(pickInput({ candidates, request: features({ hashes: hashes(4) }), random: scripted([]) }));
      expect(result).toEqual({ order: [], reason: "none", insert: null, state: INITIAL_PICKER_STATE });
    }
  });

  it.each(ALL.filter(([name]) => name !== "round_robin"))("%s hands the picker state back unchanged", (_, policy) => {
    const state = { roundRobinCursor: 7 };
    expect(policy(pickInput({ candidates: [replica("a"), replica("b")], state, random: cryptoRandom() })).state).toBe(state);
  });
});

describe("random", () => {
  it("is a Fisher–Yates shuffle of the eligible replicas: scripted", () => {
    // i = 2 swaps with uniformInt(3) = 0: [c, b, a]; i = 1 swaps with uniformInt(2) = 0: [b, c, a].
    const fleet = [replica("a"), replica("drained", { weight: 0 }), replica("b"), replica("c")];
    expect(randomPolicy(pickInput({ candidates: fleet, random: scripted([0, 0]) })).order).toEqual(["b", "c", "a"]);
  });

  // 30,000 picks, false failure 1e-4 (chi-square, 2 df); one replica 5 points off passes
  // with probability < 1e-40. Load and weight must not bias it.
  it("picks first uniformly, whatever the load, within a chi-square bound", () => {
    const runs = 30_000;
    expect(missRate(runs, 1 / 3, 1 / 3 + 0.05, CHI2_CRITICAL_1E4[2])).toBeLessThan(1e-40);
    const fleet = [replica("a", { inflight: 50 }), replica("b", { weight: 5 }), replica("c")];
    const random = cryptoRandom();
    const counts = [0, 0, 0];
    for (let run = 0; run < runs; run++) counts["abc".indexOf(randomPolicy(pickInput({ candidates: fleet, random })).order[0]!)]!++;
    expect(chiSquare(counts, [1 / 3, 1 / 3, 1 / 3], runs)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });
});

describe("round robin", () => {
  it("walks the eligible replicas sorted by id, one step per pick, and wraps", () => {
    const fleet = [replica("c"), replica("a"), replica("off", { weight: 0 }), replica("b")];
    let state = INITIAL_PICKER_STATE;
    const orders: string[][] = [];
    for (let pick = 0; pick < 4; pick++) {
      const result = roundRobin(pickInput({ candidates: fleet, state, random: scripted([]) }));
      expect(result.reason).toBe("round_robin");
      orders.push(result.order);
      state = result.state;
    }
    expect(orders).toEqual([["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]);
  });

  it("wraps a cursor left by a larger fleet", () => {
    const result = roundRobin(pickInput({ candidates: [replica("a"), replica("b")], state: { roundRobinCursor: 5 }, random: scripted([]) }));
    expect(result.order).toEqual(["b", "a"]);
    expect(result.state).toEqual({ roundRobinCursor: 0 });
  });
});

describe("power of two", () => {
  it("is the pool policy power_of_two: the lighter of two drawn, then the rest by in-flight", () => {
    const fleet = [replica("a", { inflight: 5 }), replica("b", { inflight: 1 }), replica("c", { inflight: 0 }), replica("d", { inflight: 3 })];
    const result = p2c(pickInput({ candidates: fleet, random: scripted([0, 0]) }));
    expect(result).toMatchObject({ order: ["b", "a", "c", "d"], reason: "power_of_two" });
    expect(result.order).toEqual(powerOfTwo(fleet, scripted([0, 0])).map((c) => c.id));
  });
});

describe("least loaded", () => {
  it("orders by in-flight per unit of weight, ignoring engine metrics", () => {
    const fleet = [replica("a", { inflight: 3 }), replica("b", { weight: 2, inflight: 4 }), replica("c", { inflight: 1, metrics: { waiting: 40 } }), replica("d", { weight: 0 })];
    expect(leastLoaded(pickInput({ candidates: fleet, random: scripted([]) }))).toMatchObject({ order: ["c", "b", "a"], reason: "least_loaded" });
  });
});

describe("GAIE endpoint picker", () => {
  const warmIndex = () => {
    const index = new PrefixIndex(100);
    index.add("warm", hashes(8));
    return index;
  };

  it("weighs prefix 3, queue 2, kv-cache 2 (v1.2.0 defaults)", () => {
    expect(DEFAULT_SETTINGS.gaie.weights).toEqual({ prefix: 3, queue: 2, kvCache: 2 });
  });

  it("sends a request to the replica holding its prefix when queues and caches are equal", () => {
    const fleet = [replica("cold-1"), replica("warm", { inflight: 4 }), replica("cold-2")];
    // warm 7, the cold pair 4 each: one draw orders the tie.
    const result = gaie(pickInput({ candidates: fleet, index: warmIndex(), request: features({ hashes: hashes(8) }), random: scripted([1]) }));
    expect(result).toMatchObject({ order: ["warm", "cold-1", "cold-2"], reason: "scored", insert: { replica: "warm", hashes: hashes(8) } });
  });

  it("leaves the prefix when queue and cache together outweigh it, and filters nothing", () => {
    // warm: 3 + 2·0 + 2·(1 − 0.9) = 3.2; cold: 0 + 2 + 2 = 4. Warm is saturated yet still listed.
    const fleet = [replica("warm", { metrics: { waiting: 6, kvUsage: 0.9 } }), replica("cold")];
    const result = gaie(pickInput({ candidates: fleet, index: warmIndex(), request: features({ hashes: hashes(8) }), random: scripted([]) }));
    expect(result.order).toEqual(["cold", "warm"]);
  });

  it("with every replica stale, routes by load with two choices", () => {
    const fleet = [replica("a", { inflight: 5, metrics: null }), replica("b", { inflight: 1, metrics: null }), replica("c", { metrics: { sampledAt: STALE } })];
    const result = gaie(pickInput({ candidates: fleet, random: scripted([0, 0]) })); // draws a and b
    expect(result).toMatchObject({ order: ["b", "c", "a"], reason: "stale" });
  });

  it("takes a pool's own weights", () => {
    // Queue only: the shorter queue wins although the other holds the whole prefix.
    const settings = scoringSettings({ gaie: { weights: { queue: 1 } } });
    const fleet = [replica("warm", { metrics: { waiting: 2 } }), replica("cold", { metrics: { waiting: 1 } })];
    const result = gaie(pickInput({ candidates: fleet, index: warmIndex(), request: features({ hashes: hashes(8) }), settings, random: scripted([]) }));
    expect(result.order).toEqual(["cold", "warm"]);
  });
});

describe("scoring settings", () => {
  it("keep the reference defaults", () => {
    const s = DEFAULT_SETTINGS;
    expect(s.saturation).toEqual({ queueDepth: 5, kvUsage: 0.8 });
    expect(s.ray).toEqual({ imbalancedThreshold: 10, matchRateThreshold: 0.1 });
    expect(s.sglang).toEqual({ cacheThreshold: 0.3, balanceAbs: 64, balanceRel: 1.5, onMiss: "smallest_tree" });
    expect(s.stalenessMs).toBe(5_000);
  });

  it("merge a pool's overrides section by section, weights replaced whole, defaults untouched", () => {
    const s = scoringSettings({ stalenessMs: 2_000, switchyard: { busyLoadFactor: 1.5, weights: { inflight: 1 } } });
    expect(s.stalenessMs).toBe(2_000);
    expect(s.switchyard).toEqual({ ...DEFAULT_SETTINGS.switchyard, busyLoadFactor: 1.5, weights: { inflight: 1 } });
    expect(s.gaie).toBe(DEFAULT_SETTINGS.gaie);
    expect(DEFAULT_SETTINGS.switchyard.busyLoadFactor).toBe(3);
    expect(scoringSettings()).toEqual(DEFAULT_SETTINGS);
  });

  it("are frozen, so no policy can change another pool's defaults", () => {
    expect(Object.isFrozen(DEFAULT_SETTINGS.switchyard.weights)).toBe(true);
    expect(() => {
      (DEFAULT_SETTINGS.sglang as { balanceAbs: number }).balanceAbs = 1;
    }).toThrow(TypeError);
  });
});
