import { describe, expect, it } from "vitest";
import { allocate, type Allocation, type LpRoute } from "../../src/core/routewise/lp";
import { uniformFloat, uniformInt, type RandomSource } from "../../src/lib/random";
import { seeded } from "../support/seeded-random";

const route = (cost: number, latencyMs: number, cap = 1): LpRoute => ({ cost, latencyMs, cap });

function expectSplit(allocation: Allocation, fractions: number[]) {
  expect(allocation.fractions).toHaveLength(fractions.length);
  allocation.fractions.forEach((x, i) => expect(x, `route ${i} of ${allocation.fractions}`).toBeCloseTo(fractions[i]!, 12));
}

describe("allocate: targeted cases", () => {
  it("alpha = 0 buys the cheapest route, the faster of two equally cheap ones", () => {
    const allocation = allocate([route(1, 100), route(1, 50), route(2, 10)], 0);
    expectSplit(allocation, [0, 1, 0]);
    expect(allocation).toMatchObject({ budget: 1, cheapest: 1, dearest: 2, expectedCost: 1, expectedLatencyMs: 50, budgetMet: true, capacityShort: false });
  });

  it("alpha = 1 buys the fastest route, the cheaper of two equally fast ones", () => {
    expectSplit(allocate([route(1, 100), route(3, 10), route(2, 10)], 1), [0, 0, 1]);
  });

  it("identical routes: the lower index takes the traffic", () => {
    expectSplit(allocate([route(2, 10), route(2, 10)], 1), [1, 0]);
    expectSplit(allocate([route(2, 10), route(2, 10)], 0), [1, 0]);
  });

  it("a cap on the fastest route sends the rest to the next fastest", () => {
    expectSplit(allocate([route(1, 100), route(3, 10, 0.3), route(2, 40)], 1), [0, 0.3, 0.7]);
  });

  it("a binding budget mixes the two routes exactly: 0.75 × 1 + 0.25 × 3 = 1.5 = 1 + 0.25 × (3 − 1)", () => {
    // Moving traffic from the slow route to the fast one costs 2 per unit and saves 80 ms;
    // the budget leaves 0.5 to spend, so 0.25 of the traffic moves.
    const allocation = allocate([route(1, 100), route(3, 20)], 0.25);
    expectSplit(allocation, [0.75, 0.25]);
    expect(allocation.budget).toBe(1.5);
    expect(allocation.expectedCost).toBeCloseTo(1.5, 12);
    expect(allocation.expectedLatencyMs).toBeCloseTo(80, 9);
    expect(allocation.budgetMet).toBe(true);
  });

  it("a binding budget past the first breakpoint: the fill crosses B between (mid, fast) and (mid, cheap)", () => {
    // cheap (0, 100 ms), mid (1, 50 ms, cap 0.5), fast (4, 10 ms). B = 0.5 × 4 = 2.
    // λ = 0 fills fast (cost 4). Past λ = 40/3 (fast vs mid) mid comes first: mid 0.5 + fast
    // 0.5 cost 2.5. Past λ = 22.5 (fast vs cheap): mid 0.5 + cheap 0.5 cost 0.5. Mixing the
    // last two at cost 2: fast = 0.5 × (2 − 0.5) / (2.5 − 0.5) = 0.375, cheap 0.125.
    const allocation = allocate([route(0, 100), route(1, 50, 0.5), route(4, 10)], 0.5);
    expectSplit(allocation, [0.125, 0.5, 0.375]);
    expect(allocation.expectedCost).toBeCloseTo(2, 12);
    expect(allocation.expectedLatencyMs).toBeCloseTo(12.5 + 25 + 3.75, 9);
  });

  it("caps summing below 1: every route at its cap, scaled to carry all traffic", () => {
    const allocation = allocate([route(1, 10, 0.2), route(2, 5, 0.3), route(0, 1, 0)], 1);
    expectSplit(allocation, [0.4, 0.6, 0]);
    expect(allocation.capacityShort).toBe(true);
    expect(allocation.budgetMet).toBe(true);
  });

  it("capacity short: the only split is both the cheapest and the dearest, so it is within budget", () => {
    const allocation = allocate([route(0, 10, 0.2), route(10, 5, 0.3)], 0.1); // the only split costs 6
    expectSplit(allocation, [0.4, 0.6]);
    expect(allocation).toMatchObject({ capacityShort: true, budgetMet: true });
    expect(allocation.budget).toBeCloseTo(6, 12);
  });

  it("a free route capped below the traffic: cheapest and dearest are splits the caps allow, so a low alpha stays reachable", () => {
    // The free route carries at most half: the cheapest split costs 0.5 × 10 = 5, the
    // dearest 10, so B = 5 + 0.2 × 5 = 6. Per-route costs (0 and 10) would give B = 2, which
    // no split meets. The fastest split within 6: 0.4 free (slow) + 0.6 on the fast dear route.
    const allocation = allocate([route(0, 100, 0.5), route(10, 50), route(10, 10)], 0.2);
    expect(allocation.cheapest).toBeCloseTo(5, 12);
    expect(allocation.dearest).toBeCloseTo(10, 12);
    expect(allocation.budget).toBeCloseTo(6, 12);
    expectSplit(allocation, [0.4, 0, 0.6]);
    expect(allocation).toMatchObject({ budgetMet: true, capacityShort: false });
    expect(allocation.expectedCost).toBeCloseTo(6, 12);
  });

  it("alpha = 0 with a capped free route: the cheapest split, its faster form", () => {
    const allocation = allocate([route(0, 100, 0.5), route(10, 50), route(10, 10)], 0);
    expectSplit(allocation, [0.5, 0, 0.5]);
    expect(allocation).toMatchObject({ budgetMet: true });
  });

  it("routes with cap 0 get nothing and do not set cheapest or dearest", () => {
    const allocation = allocate([route(0, 1, 0), route(2, 50), route(4, 10), route(100, 0, 0)], 0.5);
    expect(allocation.fractions[0]).toBe(0);
    expect(allocation.fractions[3]).toBe(0);
    expect(allocation).toMatchObject({ cheapest: 2, dearest: 4, budget: 3 });
    expectSplit(allocation, [0, 0.5, 0.5, 0]);
  });

  it("no routes: no fractions; no capacity: all zero", () => {
    expect(allocate([], 0.5).fractions).toEqual([]);
    expect(allocate([], 0.5).capacityShort).toBe(true);
    expect(allocate([route(1, 1, 0)], 0.5)).toMatchObject({ fractions: [0], capacityShort: true });
  });

  it("caps above 1 count as 1", () => {
    expectSplit(allocate([route(1, 1, 5), route(2, 2)], 1), [1, 0]);
  });

  it("refuses alpha outside [0, 1] and malformed routes", () => {
    expect(() => allocate([route(1, 1)], 1.5)).toThrow(RangeError);
    expect(() => allocate([route(1, 1)], Number.NaN)).toThrow(RangeError);
    expect(() => allocate([route(-1, 1)], 0.5)).toThrow(RangeError);
    expect(() => allocate([route(1, Number.POSITIVE_INFINITY)], 0.5)).toThrow(RangeError);
    expect(() => allocate([route(1, 1, Number.NaN)], 0.5)).toThrow(RangeError);
  });
});

/**
 * The exact optimum by enumeration. An optimal solution of a bounded LP lies at a
 * vertex, and a vertex of {Σx = 1, 0 ≤ x ≤ cap, cost·x ≤ B} has every variable at 0 or at
 * its cap except at most two "free" ones, solved from the active equalities: Σx = 1
 * (one free), plus cost·x = B (two free). Every such candidate is built; the feasible
 * ones are kept.
 */
function vertices(routes: readonly LpRoute[], budget: number | null): number[][] {
  const n = routes.length;
  const caps = routes.map((r) => Math.min(1, r.cap));
  const out: number[][] = [];
  const eps = 1e-12;
  const feasible = (x: number[]) =>
    x.every((v, i) => v >= -eps && v <= caps[i]! + eps) &&
    Math.abs(x.reduce((a, b) => a + b, 0) - 1) <= 1e-9 &&
    (budget === null || x.reduce((s, v, i) => s + v * routes[i]!.cost, 0) <= budget + 1e-12 * Math.max(1, budget));
  for (let code = 0; code < 3 ** n; code++) {
    const state = Array.from({ length: n }, (_, i) => Math.floor(code / 3 ** i) % 3); // 0: at 0, 1: at cap, 2: free
    const free = state.flatMap((s, i) => (s === 2 ? [i] : []));
    if (free.length > 2) continue;
    const x = state.map((s, i) => (s === 1 ? caps[i]! : 0));
    const mass = 1 - x.reduce((a, b) => a + b, 0);
    const spent = x.reduce((s, v, i) => s + v * routes[i]!.cost, 0);
    if (free.length === 1) x[free[0]!] = mass;
    if (free.length === 2) {
      if (budget === null) continue;
      const [f, g] = free as [number, number];
      const cf = routes[f]!.cost;
      const cg = routes[g]!.cost;
      if (cf === cg) continue; // singular: its solutions include the vertices with one of them at a bound
      // x_f + x_g = mass, cf·x_f + cg·x_g = budget − spent
      x[f] = (budget - spent - cg * mass) / (cf - cg);
      x[g] = mass - x[f]!;
    }
    if (feasible(x)) out.push(x);
  }
  return out;
}

const latencyOf = (routes: readonly LpRoute[], x: readonly number[]) => x.reduce((s, v, i) => s + v * routes[i]!.latencyMs, 0);
const costOf = (routes: readonly LpRoute[], x: readonly number[]) => x.reduce((s, v, i) => s + v * routes[i]!.cost, 0);

function randomInstance(random: RandomSource): { routes: LpRoute[]; alpha: number } {
  const n = 1 + uniformInt(random, 6);
  // Half the instances draw from a few small integers, so ties in cost, latency and
  // breakpoints (three routes swapping at one λ) are common; the rest are continuous.
  const coarse = uniformInt(random, 2) === 0;
  const value = (scale: number) => (coarse ? uniformInt(random, 4) * scale : uniformFloat(random) * scale);
  const cap = () => {
    const kind = uniformInt(random, 4);
    return kind === 0 ? 1 : kind === 1 ? 0 : coarse ? (1 + uniformInt(random, 4)) / 4 : uniformFloat(random);
  };
  const routes = Array.from({ length: n }, () => ({ cost: value(0.01), latencyMs: value(5_000), cap: cap() }));
  const alphaKind = uniformInt(random, 4);
  const alpha = alphaKind === 0 ? 0 : alphaKind === 1 ? 1 : coarse ? uniformInt(random, 5) / 4 : uniformFloat(random);
  return { routes, alpha };
}

describe("allocate against a brute-force vertex enumeration", () => {
  // 5,000 seeded instances of 1-6 routes: a fixed set, so this passes or fails the same way every run.
  const INSTANCES = 5_000;

  it(`matches the enumerated optimum on ${INSTANCES} random instances`, () => {
    const random = seeded(20_261_122);
    const seen = { binding: 0, slack: 0, short: 0 };
    for (let k = 0; k < INSTANCES; k++) {
      const { routes, alpha } = randomInstance(random);
      const allocation = allocate(routes, alpha);
      const x = allocation.fractions;
      const context = JSON.stringify({ k, routes, alpha, x });
      const scale = Math.max(1, ...routes.map((r) => r.latencyMs)); // 1e-9 relative to the slowest route
      const caps = routes.map((r) => Math.min(1, r.cap));
      const capacity = caps.reduce((a, b) => a + b, 0);

      if (capacity < 1) {
        seen.short++;
        expect(allocation.capacityShort, context).toBe(true);
        if (capacity > 0) x.forEach((v, i) => expect(v, context).toBeCloseTo(caps[i]! / capacity, 12));
        continue;
      }
      expect(allocation.capacityShort, context).toBe(false);
      expect(Math.abs(x.reduce((a, b) => a + b, 0) - 1), context).toBeLessThanOrEqual(1e-9);
      x.forEach((v, i) => {
        expect(v, context).toBeGreaterThanOrEqual(0);
        expect(v, context).toBeLessThanOrEqual(caps[i]! + 1e-9);
      });

      // The budget is set between the cheapest and the dearest split the caps allow.
      const all = vertices(routes, null);
      const minCost = Math.min(...all.map((v) => costOf(routes, v)));
      const maxCost = Math.max(...all.map((v) => costOf(routes, v)));
      const costScale = Math.max(1e-12, maxCost);
      expect(Math.abs(allocation.cheapest - minCost), context).toBeLessThanOrEqual(1e-12 * costScale);
      expect(Math.abs(allocation.dearest - maxCost), context).toBeLessThanOrEqual(1e-12 * costScale);
      expect(Math.abs(allocation.budget - (minCost + alpha * (maxCost - minCost))), context).toBeLessThanOrEqual(1e-12 * costScale);
      const withinBudget = vertices(routes, allocation.budget);
      expect(withinBudget.length, context).toBeGreaterThan(0);
      const best = Math.min(...withinBudget.map((v) => latencyOf(routes, v)));
      expect(allocation.budgetMet, context).toBe(true);
      expect(allocation.expectedCost, context).toBeLessThanOrEqual(allocation.budget + 1e-12);
      expect(Math.abs(allocation.expectedLatencyMs - best), context).toBeLessThanOrEqual(1e-9 * scale);
      expect(Math.abs(latencyOf(routes, x) - best), context).toBeLessThanOrEqual(1e-9 * scale);
      if (Math.abs(allocation.expectedCost - allocation.budget) <= 1e-12) seen.binding++;
      else seen.slack++;
    }
    // The instances exercise every branch, not just the easy one.
    for (const [branch, count] of Object.entries(seen)) expect(count, `${branch}: ${JSON.stringify(seen)}`).toBeGreaterThan(INSTANCES / 50);
  });

  it("the verifier itself finds a better split than a wrong answer (it is not vacuous)", () => {
    // All traffic on the cheap route is within budget but slower than the optimum.
    const routes = [route(1, 100), route(3, 20)];
    const best = Math.min(...vertices(routes, 1.5).map((v) => latencyOf(routes, v)));
    expect(best).toBeCloseTo(80, 9);
    expect(latencyOf(routes, [1, 0]) - best).toBeGreaterThan(1);
  });
});
