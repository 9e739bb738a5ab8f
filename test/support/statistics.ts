/**
 * Statistical bounds for randomised behaviour. Critical values at p = 1e-4: an assertion
 * on a fair random source fails by chance about once in 10,000 runs (the false-failure
 * rate). test/unit/statistics.test.ts checks these values against the distributions.
 *
 * A bound is only worth its false-failure rate if it also catches a biased router. Every
 * split test states its sample size, its false-failure rate and its *miss rate* against a
 * router 5 points off (55/45 under a 60/40 test), computed with `missRate`, and runs the
 * same check on such a router to show that it fails.
 */
export const CHI2_CRITICAL_1E4 = { 1: 15.14, 2: 18.42, 4: 23.51 } as const;

/** Pearson's chi-square of observed counts against expected shares of `total`. */
export function chiSquare(observed: number[], expectedShares: number[], total: number): number {
  return observed.reduce((sum, o, i) => {
    const e = expectedShares[i]! * total;
    return sum + (o - e) ** 2 / e;
  }, 0);
}

/** Counts of `draw()`'s results over `n` draws, for results 0..k-1. */
export function tally(k: number, n: number, draw: () => number): number[] {
  const counts = Array<number>(k).fill(0);
  for (let i = 0; i < n; i++) counts[draw()]!++;
  return counts;
}

/** P(Z > z) for a standard normal Z (erfc by Numerical Recipes' Chebyshev fit, relative error < 1.2e-7). */
export function normalTail(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const erfc = t * Math.exp(-x * x + poly);
  return z >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/**
 * The chance that a test of one category's count against share `p0` (chi-square with
 * one degree of freedom below `critical`) still passes over `n` draws when the true share
 * is `p1`: the test's miss rate against that bias, 1 − power (normal approximation to
 * the binomial). For k categories, merging the others into one never raises Pearson's
 * statistic, so the same formula at the k-category critical value bounds the miss rate.
 */
export function missRate(n: number, p0: number, p1: number, critical: number): number {
  const halfWidth = Math.sqrt(critical * n * p0 * (1 - p0)); // |count − n·p0| below this passes
  const mean = n * p1;
  const sd = Math.sqrt(n * p1 * (1 - p1));
  return normalTail((n * p0 - halfWidth - mean) / sd) - normalTail((n * p0 + halfWidth - mean) / sd);
}
