import { describe, expect, it } from "vitest";
import { cryptoRandom } from "../../src/routing/random";
import { pickWeightedIndex, weightedOrder } from "../../src/routing/weighted";
import { scripted } from "../support/scripted-random";
import { CHI2_CRITICAL_1E4, chiSquare } from "../support/statistics";

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

  it("splits 60/40 within a chi-square bound over 20,000 crypto draws", () => {
    const source = cryptoRandom();
    const items = [{ weight: 60 }, { weight: 40 }];
    const counts = [0, 0];
    const draws = 20_000;
    for (let i = 0; i < draws; i++) counts[pickWeightedIndex(items, source)]!++;
    expect(chiSquare(counts, [0.6, 0.4], draws)).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("splits fractional weights 0.3/0.3/0.4 within a chi-square bound", () => {
    const source = cryptoRandom();
    const items = [{ weight: 0.3 }, { weight: 0.3 }, { weight: 0.4 }];
    const counts = [0, 0, 0];
    const draws = 20_000;
    for (let i = 0; i < draws; i++) counts[pickWeightedIndex(items, source)]!++;
    expect(chiSquare(counts, [0.3, 0.3, 0.4], draws)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });

  it("spreads second place by weight among the rest", () => {
    // a:1 b:1 c:2. P(second = c) = P(first=a)*2/3 + P(first=b)*2/3 = 0.25*2/3*2 = 1/3.
    const source = cryptoRandom();
    const items = [
      { id: "a", weight: 1 },
      { id: "b", weight: 1 },
      { id: "c", weight: 2 },
    ];
    let secondIsC = 0;
    const draws = 20_000;
    for (let i = 0; i < draws; i++) if (weightedOrder(items, source)[1]!.id === "c") secondIsC++;
    expect(chiSquare([secondIsC, draws - secondIsC], [1 / 3, 2 / 3], draws)).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });
});
