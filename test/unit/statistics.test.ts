/**
 * The statistics the split tests rely on (test/support/statistics.ts): the critical
 * values are the p = 1e-4 points they claim to be, and `missRate` predicts what a biased
 * router actually does against a bound.
 */
import { describe, expect, it } from "vitest";
import { cryptoRandom } from "../../src/lib/random";
import { pickWeightedIndex } from "../../src/core/picking/weighted";
import { CHI2_CRITICAL_1E4, chiSquare, missRate, normalTail, tally } from "../support/statistics";

describe("critical values", () => {
  it("are the p = 1e-4 points of chi-square with 1, 2 and 4 degrees of freedom", () => {
    const survival = {
      1: (x: number) => 2 * normalTail(Math.sqrt(x)),
      2: (x: number) => Math.exp(-x / 2),
      4: (x: number) => Math.exp(-x / 2) * (1 + x / 2),
    };
    for (const df of [1, 2, 4] as const) {
      const p = survival[df](CHI2_CRITICAL_1E4[df]);
      expect(p, `${df} df`).toBeGreaterThan(0.95e-4);
      expect(p, `${df} df`).toBeLessThan(1.05e-4);
    }
  });

  it("normalTail matches known quantiles", () => {
    expect(normalTail(0)).toBeCloseTo(0.5, 7);
    expect(normalTail(1.959964)).toBeCloseTo(0.025, 6);
    expect(normalTail(-1.959964)).toBeCloseTo(0.975, 6);
    expect(normalTail(3.719016) / 1e-4).toBeCloseTo(1, 3);
  });
});

describe("missRate", () => {
  it("is 1 − the false-failure rate when there is no bias", () => {
    expect(1 - missRate(20_000, 0.6, 0.6, CHI2_CRITICAL_1E4[1])).toBeCloseTo(1e-4, 5);
  });

  // The HTTP split test (test/integration/proxy.test.ts) makes 1,000 requests. Computed,
  // a 55/45 router passes its 60/40 bound 74% of the time; measured here over 2,000
  // simulated runs of 1,000 draws (the router's own pickWeightedIndex at 55/45). The
  // bound on the measured rate is 5 sd of a proportion over 2,000 runs (sd ≈ 0.0098).
  it("predicts how often a 55/45 router passes a 60/40 test of 1,000 draws", () => {
    const predicted = missRate(1_000, 0.6, 0.55, CHI2_CRITICAL_1E4[1]);
    expect(predicted).toBeCloseTo(0.743, 2);
    const source = cryptoRandom();
    const items = [{ weight: 55 }, { weight: 45 }];
    const runs = 2_000;
    let passed = 0;
    for (let run = 0; run < runs; run++) {
      const counts = tally(2, 1_000, () => pickWeightedIndex(items, source));
      if (chiSquare(counts, [0.6, 0.4], 1_000) < CHI2_CRITICAL_1E4[1]) passed++;
    }
    expect(Math.abs(passed / runs - predicted), `passed ${passed} of ${runs}`).toBeLessThan(5 * Math.sqrt((predicted * (1 - predicted)) / runs));
  });
});
