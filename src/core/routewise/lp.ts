/**
 * RouteWise's linear program: the traffic split among a model's feasible routes.
 *
 *   minimise   Σ xᵢ·latencyᵢ
 *   subject to Σ xᵢ = 1,  0 ≤ xᵢ ≤ capᵢ,  Σ xᵢ·costᵢ ≤ B
 *   where      B = cheapest + α·(dearest − cheapest), the cheapest and dearest splits the caps allow
 *
 * Solved exactly by Lagrangian relaxation. Without the budget row the polytope is a
 * simplex with caps, and a linear function is minimised on it by a greedy fill: routes
 * in increasing order of the function's coefficient, each up to its cap, until the
 * fractions reach 1. Pricing the budget row in at λ ≥ 0 gives coefficients latencyᵢ +
 * λ·costᵢ; their order changes only at the breakpoints λ where two routes swap, and the
 * greedy fill's cost never rises as λ grows (for λ₁ < λ₂ with fills x₁, x₂, adding the
 * two optimality inequalities gives (λ₂ − λ₁)·(cost·x₂ − cost·x₁) ≤ 0). So:
 *
 *   - the fill at λ = 0 (fastest first) within budget is optimal outright;
 *   - else the budget binds: find the breakpoint λ* where the fill's cost crosses B, take
 *     the fills x⁻ and x⁺ just before and after it, and mix them so cost = B exactly.
 *     Both fills minimise Σ xᵢ·(latencyᵢ + λ*·costᵢ) over the capped simplex, so their mix
 *     x̂ does too, and for any y within budget:
 *       latency·y ≥ latency·y + λ*·(cost·y − B) ≥ latency·x̂ + λ*·(cost·x̂ − B) = latency·x̂.
 *
 * O(n² log n) for n routes: the breakpoints are sorted and binary-searched, a fill per
 * probe. Ties are broken deterministically: lower cost first, then the lower index.
 */

export interface LpRoute {
  /** Expected cost of one request on this route (currency). */
  cost: number;
  /** Expected latency of one request on this route, ms. */
  latencyMs: number;
  /** The largest fraction of traffic the route may take, in [0, 1]; 0 keeps it out. */
  cap: number;
}

export interface Allocation {
  /** Fraction of traffic per route, in the input's order; they sum to 1 unless no route has capacity. */
  fractions: number[];
  /** The cost ceiling per request, B. */
  budget: number;
  /**
   * Cost per request of the cheapest and the dearest split the caps allow (cheapest or
   * dearest routes filled first). Over splits, not single routes: a free route capped at a
   * quarter of the traffic must not make a low α's budget unreachable.
   */
  cheapest: number;
  dearest: number;
  /** Σ fractionᵢ·costᵢ and Σ fractionᵢ·latencyᵢ. */
  expectedCost: number;
  expectedLatencyMs: number;
  /** False when the caps force more cost than B: the allocation is then the cheapest possible. */
  budgetMet: boolean;
  /** True when the caps sum below 1: every route runs at its cap, scaled up to carry all traffic. */
  capacityShort: boolean;
}

const COST_TOLERANCE = 1e-12; // relative to the dearest route: a sum of a few products at double precision is ~1e-16 off, far below this
const CAPACITY_TOLERANCE = 1e-12; // caps summing this close to 1 are enough: the final normalisation absorbs the rest

/** A route's place in a fill at multiplier λ: its key, then lower cost, then lower index. */
function orderAt(routes: readonly LpRoute[], active: readonly number[], lambda: number): number[] {
  const key = (i: number) => routes[i]!.latencyMs + lambda * routes[i]!.cost;
  return [...active].sort((a, b) => key(a) - key(b) || routes[a]!.cost - routes[b]!.cost || a - b);
}

/** Cheapest first, then faster, then lower index: the order as λ → ∞. */
function cheapestFirst(routes: readonly LpRoute[], active: readonly number[]): number[] {
  return [...active].sort((a, b) => routes[a]!.cost - routes[b]!.cost || routes[a]!.latencyMs - routes[b]!.latencyMs || a - b);
}

/** The greedy fill: routes in `order`, each up to its cap, until the fractions reach 1. */
function fill(order: readonly number[], caps: readonly number[], n: number): number[] {
  const x = Array<number>(n).fill(0);
  let left = 1;
  for (const i of order) {
    if (left <= 0) break;
    x[i] = Math.min(caps[i]!, left);
    left -= x[i]!;
  }
  return x;
}

function dot(x: readonly number[], routes: readonly LpRoute[], field: "cost" | "latencyMs"): number {
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += x[i]! * routes[i]![field];
  return sum;
}

/** Positive λ where two routes' keys latency + λ·cost are equal: one is faster, the other cheaper. Ascending, distinct. */
function breakpoints(routes: readonly LpRoute[], active: readonly number[]): number[] {
  const out: number[] = [];
  for (let a = 0; a < active.length; a++) {
    for (let b = a + 1; b < active.length; b++) {
      const i = routes[active[a]!]!;
      const j = routes[active[b]!]!;
      const dLatency = j.latencyMs - i.latencyMs;
      const dCost = i.cost - j.cost;
      if (dCost !== 0 && dLatency / dCost > 0) out.push(dLatency / dCost);
    }
  }
  return [...new Set(out)].sort((a, b) => a - b);
}

/**
 * The fills to search, in increasing λ: λ = 0 (fastest first), one between each pair of
 * consecutive breakpoints (the order is constant there), and cheapest first (past the
 * last breakpoint). Probing between breakpoints rather than at them keeps floating-point
 * near-ties of the keys out of the order.
 */
function probes(routes: readonly LpRoute[], active: readonly number[]): Array<() => number[]> {
  const lambdas = breakpoints(routes, active);
  const orders: Array<() => number[]> = [() => orderAt(routes, active, 0)];
  for (let k = 0; k + 1 < lambdas.length; k++) orders.push(() => orderAt(routes, active, (lambdas[k]! + lambdas[k + 1]!) / 2));
  orders.push(() => cheapestFirst(routes, active));
  return orders;
}

/** The split that minimises expected latency within the cost budget set by `alpha`. */
export function allocate(routes: readonly LpRoute[], alpha: number): Allocation {
  if (!(alpha >= 0 && alpha <= 1)) throw new RangeError(`allocate: alpha must be in [0, 1], got ${alpha}`);
  for (const r of routes) {
    if (!(Number.isFinite(r.cost) && r.cost >= 0 && Number.isFinite(r.latencyMs) && r.latencyMs >= 0 && r.cap >= 0)) {
      throw new RangeError(`allocate: a route needs finite cost >= 0, latencyMs >= 0 and cap >= 0, got ${JSON.stringify(r)}`);
    }
  }
  const n = routes.length;
  const caps = routes.map((r) => Math.min(1, r.cap));
  const active = routes.flatMap((_, i) => (caps[i]! > 0 ? [i] : []));
  const capacity = active.reduce((sum, i) => sum + caps[i]!, 0);
  const cheapestSplit = fill(cheapestFirst(routes, active), caps, n);
  const dearestSplit = fill([...cheapestFirst(routes, active)].reverse(), caps, n);
  const cheapest = dot(normalise(cheapestSplit), routes, "cost");
  const dearest = dot(normalise(dearestSplit), routes, "cost");
  const budget = cheapest + alpha * (dearest - cheapest);
  const tolerance = COST_TOLERANCE * Math.max(0, ...active.map((i) => routes[i]!.cost));
  const withinBudget = (x: readonly number[]) => dot(x, routes, "cost") <= budget + tolerance;
  const answer = (x: number[], flags: { budgetMet?: boolean; capacityShort?: boolean }): Allocation => {
    const fractions = normalise(x);
    return {
      fractions,
      budget,
      cheapest,
      dearest,
      expectedCost: dot(fractions, routes, "cost"),
      expectedLatencyMs: dot(fractions, routes, "latencyMs"),
      budgetMet: flags.budgetMet ?? withinBudget(fractions),
      capacityShort: flags.capacityShort ?? false,
    };
  };

  // Too little capacity: the only split that carries all traffic runs every route at its
  // cap, scaled by 1/capacity. Nothing is left to optimise. (No capacity at all: all zero.)
  if (capacity < 1 - CAPACITY_TOLERANCE) return answer(caps.map((cap) => (capacity > 0 ? cap / capacity : 0)), { capacityShort: true });

  // The budget starts at the cheapest split, so only rounding could put that split over it.
  if (!withinBudget(cheapestSplit)) return answer(cheapestSplit, { budgetMet: false });

  const fastest = fill(orderAt(routes, active, 0), caps, n);
  if (withinBudget(fastest)) return answer(fastest, { budgetMet: true });

  // The budget binds. Fills cost less as λ grows; find the first probe within budget
  // (the last one, cheapest first, is) and mix it with the probe before, which is not.
  const orders = probes(routes, active);
  let over = 0; // highest probe known over budget
  let under = orders.length - 1; // lowest probe known within budget
  const fills = new Map<number, number[]>([
    [over, fastest],
    [under, cheapestSplit],
  ]);
  const fillOf = (k: number) => fills.get(k) ?? fills.set(k, fill(orders[k]!(), caps, n)).get(k)!;
  while (under - over > 1) {
    const middle = (over + under) >> 1;
    if (withinBudget(fillOf(middle))) under = middle;
    else over = middle;
  }
  const before = fillOf(over);
  const after = fillOf(under);
  const costBefore = dot(before, routes, "cost");
  const costAfter = dot(after, routes, "cost");
  // before·t + after·(1 − t) costs exactly B; t is clamped against rounding at the edges.
  const t = Math.min(1, Math.max(0, (budget - costAfter) / (costBefore - costAfter)));
  return answer(
    before.map((b, i) => t * b + (1 - t) * after[i]!),
    { budgetMet: true },
  );
}

/** Tiny negatives from rounding become 0, and the fractions are scaled to sum to 1 exactly enough. */
function normalise(x: readonly number[]): number[] {
  const clamped = x.map((v) => (v > 0 ? v : 0));
  const sum = clamped.reduce((a, b) => a + b, 0);
  return sum > 0 ? clamped.map((v) => v / sum) : clamped;
}
