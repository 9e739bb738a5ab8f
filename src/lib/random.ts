/**
 * Randomness for routing decisions. Policies take a `RandomSource` so tests can inject
 * a scripted one; production uses Web Crypto.
 */
export interface RandomSource {
  /** A uniformly distributed integer in [0, 2^32). */
  uint32(): number;
}

const UINT32_RANGE = 2 ** 32;
const CRYPTO_BATCH = 64; // uint32s fetched per getRandomValues call: one call serves several requests

/** Web Crypto, batched: `getRandomValues` per draw costs more than the draw. */
export function cryptoRandom(): RandomSource {
  const buffer = new Uint32Array(CRYPTO_BATCH);
  let next = CRYPTO_BATCH;
  return {
    uint32() {
      if (next === CRYPTO_BATCH) {
        crypto.getRandomValues(buffer);
        next = 0;
      }
      return buffer[next++]!;
    },
  };
}

/**
 * Uniform integer in [0, n) by rejection sampling: draws that fall in the last partial
 * block of 2^32 are thrown away, so no value is favoured (no modulo bias).
 */
export function uniformInt(source: RandomSource, n: number): number {
  if (!Number.isInteger(n) || n <= 0 || n > UINT32_RANGE) throw new RangeError(`uniformInt: n must be an integer in [1, 2^32], got ${n}`);
  const limit = UINT32_RANGE - (UINT32_RANGE % n); // largest multiple of n that fits
  for (;;) {
    const draw = source.uint32();
    if (draw < limit) return draw % n;
  }
}

/** Uniform float in [0, 1) with 53 random bits: exact dyadic values, no rounding bias. */
export function uniformFloat(source: RandomSource): number {
  const high = source.uint32() >>> 5; // 27 bits
  const low = source.uint32() >>> 6; // 26 bits
  return (high * 2 ** 26 + low) / 2 ** 53;
}
