import type { RandomSource } from "../../src/lib/random";

/**
 * A deterministic RandomSource (mulberry32) for simulations whose outcome a test asserts
 * on: the same seed gives the same run, so a bound either always holds or always fails.
 * Not for statistical tests of uniformity; those use cryptoRandom.
 */
export function seeded(seed: number): RandomSource {
  let state = seed >>> 0;
  return {
    uint32() {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return (t ^ (t >>> 14)) >>> 0;
    },
  };
}
