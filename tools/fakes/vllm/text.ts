/**
 * The generated text: one 4-byte word per output token ("abc "), so the output obeys the
 * same 4-bytes-per-token model as the prompt, and a follow-up turn that quotes it costs
 * what completion_tokens said. Deterministic in (seed, prompt): like temperature 0, the
 * same prompt gets the same answer on every replica with the same seed.
 */
const LETTERS = "abcdefghijklmnopqrstuvwxyz";

export function outputWords(seed: number, fingerprint: number, from: number, count: number): string {
  let out = "";
  for (let i = from; i < from + count; i++) {
    let h = mix((seed ^ fingerprint) + Math.imul(i + 1, 0x9e3779b9));
    let word = "";
    for (let c = 0; c < 3; c++) {
      word += LETTERS[h % LETTERS.length];
      h = Math.floor(h / LETTERS.length);
    }
    out += `${word} `;
  }
  return out;
}

/** A 32-bit integer hash (murmur3's finaliser): neighbouring inputs give unrelated words. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}
