import type { RandomSource } from "../../lib/random";

/**
 * W3C trace ids (16 bytes) and span ids (8 bytes) as lowercase hex, from a random source
 * (Web Crypto in the Worker). All-zero ids are invalid in W3C Trace Context, so a draw of
 * zeros is drawn again (once in 2^64 draws).
 */
export function newTraceId(random: RandomSource): string {
  return nonZero(random, 4);
}

export function newSpanId(random: RandomSource): string {
  return nonZero(random, 2);
}

function nonZero(random: RandomSource, words: number): string {
  for (;;) {
    let hex = "";
    for (let i = 0; i < words; i++) hex += random.uint32().toString(16).padStart(8, "0");
    if (!/^0+$/.test(hex)) return hex;
  }
}
