/**
 * Statistical bounds for randomised behaviour. Critical values at p = 1e-4: an assertion
 * on a fair random source fails by chance about once in 10,000 runs.
 */
export const CHI2_CRITICAL_1E4 = { 1: 15.14, 2: 18.42 } as const;

/** Pearson's chi-square of observed counts against expected shares of `total`. */
export function chiSquare(observed: number[], expectedShares: number[], total: number): number {
  return observed.reduce((sum, o, i) => {
    const e = expectedShares[i]! * total;
    return sum + (o - e) ** 2 / e;
  }, 0);
}
