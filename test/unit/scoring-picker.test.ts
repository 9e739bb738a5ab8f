import { describe, expect, it } from "vitest";
import { cryptoRandom } from "../../src/lib/random";
import { maxScoreOrder } from "../../src/core/picking/pickers/max-score";
import { clampScore, weightedTotals } from "../../src/core/picking/scorers/totals";
import { twoChoicesOrder } from "../../src/core/picking/scoring/two-choices";
import { scripted } from "../support/scripted-random";
import { chiSquare, CHI2_CRITICAL_1E4, missRate } from "../support/statistics";

describe("clampScore", () => {
  it("clamps to [0, 1] as GAIE does, and counts null (stale) and NaN as 0", () => {
    expect([clampScore(-0.5), clampScore(0.25), clampScore(1.5), clampScore(null), clampScore(Number.NaN)]).toEqual([0, 0.25, 1, 0, 0]);
  });
});

describe("weightedTotals", () => {
  it("sums weight × clamped score per candidate, weights not normalised", () => {
    const totals = weightedTotals(
      [
        { weight: 3, scores: [1, 0.5, 0] },
        { weight: 2, scores: [0, 1, 2] }, // 2 clamps to 1
        { weight: 2, scores: [null, 0.25, -1] },
      ],
      3,
    );
    expect(totals).toEqual([3, 4, 2]);
  });

  it("ignores a zero weight and gives zeros for no scorers; empty for no candidates", () => {
    expect(weightedTotals([{ weight: 0, scores: [1, 1] }], 2)).toEqual([0, 0]);
    expect(weightedTotals([], 2)).toEqual([0, 0]);
    expect(weightedTotals([{ weight: 1, scores: [] }], 0)).toEqual([]);
  });
});

describe("maxScoreOrder", () => {
  it("puts the highest total first and returns every item once, needing no draws without ties", () => {
    expect(maxScoreOrder(["a", "b", "c", "d"], [1, 4, 2, 3], scripted([]))).toEqual(["b", "d", "c", "a"]);
    expect(maxScoreOrder([], [], scripted([]))).toEqual([]);
  });

  it("orders tied totals with the injected source: scripted", () => {
    // a and c tie at 5 (one draw: Fisher–Yates over the tied pair); b is last.
    expect(maxScoreOrder(["a", "b", "c"], [5, 1, 5], scripted([1]))).toEqual(["a", "c", "b"]);
    expect(maxScoreOrder(["a", "b", "c"], [5, 1, 5], scripted([0]))).toEqual(["c", "a", "b"]);
  });

  // 30,000 picks, false failure 1e-4 (chi-square, 2 df). A tie-break 5 points off for one
  // replica (0.383 instead of 1/3) passes with probability < 1e-40; "always the first
  // listed" is the check on a deterministic tie-break below.
  it("spreads the first choice uniformly over tied maxima within a chi-square bound", () => {
    const runs = 30_000;
    expect(missRate(runs, 1 / 3, 1 / 3 + 0.05, CHI2_CRITICAL_1E4[2])).toBeLessThan(1e-40);
    const random = cryptoRandom();
    const counts = [0, 0, 0];
    for (let run = 0; run < runs; run++) counts["abc".indexOf(maxScoreOrder(["a", "x", "b", "c"], [2, 1, 2, 2], random)[0]!)]!++;
    expect(chiSquare(counts, [1 / 3, 1 / 3, 1 / 3], runs)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
    expect(chiSquare([runs, 0, 0], [1 / 3, 1 / 3, 1 / 3], runs)).toBeGreaterThan(CHI2_CRITICAL_1E4[2]); // a deterministic tie-break fails
  });
});

describe("twoChoicesOrder", () => {
  const load: Record<string, number> = { a: 5, b: 1, c: 0, d: 3 };
  const score = (id: string) => -load[id]!;

  it("puts the better of the two drawn first, never a third that is better still", () => {
    // i = 0 (a), j = uniformInt(3) = 0, shifted past i → 1 (b). c (the best) was not drawn.
    const random = scripted([0, 0]);
    expect(twoChoicesOrder(["a", "b", "c", "d"], score, random)).toEqual(["b", "c", "d", "a"]);
    expect(random.used).toBe(2); // the rest had no ties: no further draws
  });

  it("keeps the first drawn on a tie, so a tie goes by the random draw", () => {
    expect(twoChoicesOrder(["a", "b"], () => 0, scripted([1, 0, 0]))[0]).toBe("b");
    expect(twoChoicesOrder(["a", "b"], () => 0, scripted([0, 0, 0]))[0]).toBe("a");
  });

  it("returns 0 or 1 items as they are, drawing nothing", () => {
    expect(twoChoicesOrder([], score, scripted([]))).toEqual([]);
    expect(twoChoicesOrder(["a"], score, scripted([]))).toEqual(["a"]);
  });

  it("never puts the uniquely worst first and returns every item once", () => {
    const random = cryptoRandom();
    for (let run = 0; run < 500; run++) {
      const order = twoChoicesOrder(["a", "b", "c", "d"], score, random);
      expect(order[0]).not.toBe("a");
      expect([...order].sort()).toEqual(["a", "b", "c", "d"]);
    }
  });

  // 40,000 picks over four equal items, false failure 1e-4 (chi-square, 3 df ≤ the 4-df
  // bound used here, which only makes a false failure rarer). One item 5 points off (0.30
  // instead of 0.25) passes with probability < 1e-40.
  it("chooses uniformly among equal items within a chi-square bound", () => {
    const runs = 40_000;
    expect(missRate(runs, 0.25, 0.3, CHI2_CRITICAL_1E4[4])).toBeLessThan(1e-40);
    const random = cryptoRandom();
    const counts = [0, 0, 0, 0];
    for (let run = 0; run < runs; run++) counts["abcd".indexOf(twoChoicesOrder(["a", "b", "c", "d"], () => 0, random)[0]!)]!++;
    expect(chiSquare(counts, [0.25, 0.25, 0.25, 0.25], runs)).toBeLessThan(CHI2_CRITICAL_1E4[4]);
  });
});
