import { describe, expect, it } from "vitest";
import { cryptoRandom } from "../../src/lib/random";
import { pickWeightedIndex, weightedOrder } from "../../src/core/picking/weighted";
import { scripted } from "../support/scripted-random";
import { CHI2_CRITICAL_1E4, chiSquare, missRate, tally } from "../support/statistics";

describe("pickWeightedIndex with an injected source", () => {
  const items = [{ weight: 60 }, { weight: 40 }];
  it("maps the integer draw onto cumulative weights", () => {
    expect(pickWeightedIndex(items, scripted([59]))).toBe(0);
    expect(pickWeightedIndex(items, scripted([60]))).toBe(1);
    expect(pickWeightedIndex(items, scripted([99]))).toBe(1);
  });

  it("skips weight-0 items entirely", () => {
    const withZero = [{ weight: 0 }, { weight: 1 }, { weight: 0 }];
    for (const draw of [0, 1, 2 ** 31, 2 ** 32 - 1]) expect(pickWeightedIndex(withZero, scripted([draw]))).toBe(1);
  });

  it("returns -1 when every weight is 0", () => {
    expect(pickWeightedIndex([{ weight: 0 }], scripted([]))).toBe(-1);
  });

  it("uses a 53-bit float for fractional weights", () => {
    const fractional = [{ weight: 0.3 }, { weight: 0.3 }, { weight: 0.4 }];
    expect(pickWeightedIndex(fractional, scripted([0, 0]))).toBe(0);
    expect(pickWeightedIndex(fractional, scripted([2 ** 32 - 1, 2 ** 32 - 1]))).toBe(2);
  });
});

describe("weightedOrder", () => {
  it("is a permutation of the eligible items, excluding weight 0", () => {
    const items = [
      { id: "a", weight: 3 },
      { id: "b", weight: 0 },
      { id: "c", weight: 2 },
      { id: "d", weight: 5 },
    ];
    const order = weightedOrder(items, cryptoRandom());
    expect(order.map((i) => i.id).sort()).toEqual(["a", "c", "d"]);
  });

  it("draws each place from the items left: scripted", () => {
    const items = [
      { id: "a", weight: 1 },
      { id: "b", weight: 1 },
      { id: "c", weight: 1 },
    ];
    // First draw picks index 2 (c); among [a, b], draw 1 picks b; then a.
    expect(weightedOrder(items, scripted([2, 1])).map((i) => i.id)).toEqual(["c", "b", "a"]);
  });

  // Statistical tests below: DRAWS crypto draws each, failing when Pearson's chi-square
  // passes the p = 1e-4 critical value, so a correct implementation fails by chance once
  // in 10,000 runs per assertion. Each is paired with the same check on a router 5 points
  // off, which must fail it: the computed miss rate (test/support/statistics.ts) is
  // asserted, and the biased router is actually run.
  const DRAWS = 20_000;
  const firstPicks = (items: { weight: number }[], source = cryptoRandom()) => tally(items.length, DRAWS, () => pickWeightedIndex(items, source));

  // 60/40: 20,000 draws, false failure 1e-4. A 55/45 router passes with probability
  // 1.5e-25 (the count of the first replica sits 10 sd below the bound's edge).
  it("splits 60/40 within a chi-square bound over 20,000 crypto draws", () => {
    const counts = firstPicks([{ weight: 60 }, { weight: 40 }]);
    expect(chiSquare(counts, [0.6, 0.4], DRAWS), `${counts}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("a 55/45 router fails that 60/40 test: computed and run", () => {
    expect(missRate(DRAWS, 0.6, 0.55, CHI2_CRITICAL_1E4[1])).toBeLessThan(1e-20);
    const biased = firstPicks([{ weight: 55 }, { weight: 45 }]); // the same draws through a router that splits 55/45
    expect(chiSquare(biased, [0.6, 0.4], DRAWS), `${biased}`).toBeGreaterThan(CHI2_CRITICAL_1E4[1]);
  });

  // 0.3/0.3/0.4 (2 degrees of freedom): 20,000 draws, false failure 1e-4. A router 5 points
  // off (0.3/0.25/0.45) passes with probability < 3e-32.
  it("splits fractional weights 0.3/0.3/0.4 within a chi-square bound", () => {
    const counts = firstPicks([{ weight: 0.3 }, { weight: 0.3 }, { weight: 0.4 }]);
    expect(chiSquare(counts, [0.3, 0.3, 0.4], DRAWS), `${counts}`).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });

  it("a 0.3/0.25/0.45 router fails that test: computed and run", () => {
    expect(missRate(DRAWS, 0.3, 0.25, CHI2_CRITICAL_1E4[2])).toBeLessThan(1e-20);
    const biased = firstPicks([{ weight: 0.3 }, { weight: 0.25 }, { weight: 0.45 }]);
    expect(chiSquare(biased, [0.3, 0.3, 0.4], DRAWS), `${biased}`).toBeGreaterThan(CHI2_CRITICAL_1E4[2]);
  });

  // Second place among a:1 b:1 c:2. P(second = c) = P(first=a)·2/3 + P(first=b)·2/3 = 1/3.
  // 20,000 draws, false failure 1e-4; a router 5 points off (P = 0.283) passes with
  // probability 1.6e-31, and one whose fallbacks ignore weight (P = 1/4) with 4e-117.
  const secondIsC = (order: (items: { id: string; weight: number }[]) => { id: string }[]) => {
    const items = [
      { id: "a", weight: 1 },
      { id: "b", weight: 1 },
      { id: "c", weight: 2 },
    ];
    return tally(2, DRAWS, () => (order(items)[1]!.id === "c" ? 0 : 1));
  };

  it("spreads second place by weight among the rest", () => {
    const source = cryptoRandom();
    const counts = secondIsC((items) => weightedOrder(items, source));
    expect(chiSquare(counts, [1 / 3, 2 / 3], DRAWS), `${counts}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("fallbacks that ignore weight fail that test: computed and run", () => {
    expect(missRate(DRAWS, 1 / 3, 1 / 3 - 0.05, CHI2_CRITICAL_1E4[1])).toBeLessThan(1e-20);
    const source = cryptoRandom();
    // First place by weight, the rest uniformly: P(second = c) = 1/4.
    const counts = secondIsC((items) => {
      const first = items[pickWeightedIndex(items, source)]!;
      const rest = items.filter((i) => i !== first);
      return [first, ...weightedOrder(rest.map((i) => ({ ...i, weight: 1 })), source)];
    });
    expect(chiSquare(counts, [1 / 3, 2 / 3], DRAWS), `${counts}`).toBeGreaterThan(CHI2_CRITICAL_1E4[1]);
  });
});
