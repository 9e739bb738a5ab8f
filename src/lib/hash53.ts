/**
 * A fast non-cryptographic string hash giving a 53-bit integer: exact as a JS number
 * (and in JSON), usable as a Map key, with no BigInt on the hot path.
 *
 * Two 32-bit MurmurHash3 lanes read the same input, two UTF-16 code units (32 bits) per
 * step, with different constants (lane a: murmur3 x86_32's c1/c2; lane b: murmur3
 * x86_128's c3/c4), and are cross-mixed at the end as murmur3 x86_128 does. The result
 * keeps all 32 bits of lane a and the top 21 bits of lane b.
 *
 * Why not xxhash64 as GAIE: a 64-bit hash needs BigInt (slow, and not a safe Map key as a
 * number); 53 bits is all a JS number holds exactly. Why not one 32-bit lane: against
 * 312,500 indexed blocks, a lookup of 256 hashes would falsely match one about once in 54
 * requests (256 × 312,500 / 2^32); at 53 bits it is once in ~10^8 (block-hashes.ts).
 *
 * Not for anything adversarial: a client who wants to collide with another's prefix can
 * only steer routing (which replica's cache it lands on), never read another's data.
 */

const TWO_32 = 4_294_967_296;
const LANE_B_BITS = 21; // 32 + 21 = 53 bits, Number.MAX_SAFE_INTEGER's width

/** Hash of `text.slice(from, to)` seeded with a 53-bit value (e.g. the previous block's hash). */
export function hash53(text: string, from = 0, to = text.length, seed = 0): number {
  let a = seed >>> 0; // low 32 bits of the seed
  let b = (Math.floor(seed / TWO_32) ^ 0x9e3779b9) >>> 0; // high 21 bits, spread by the golden ratio so seed 0 ≠ lane a's
  let i = from;
  for (; i + 1 < to; i += 2) {
    const k = text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16);
    a ^= mixA(k);
    a = Math.imul(rotl(a, 13), 5) + 0xe6546b64;
    b ^= mixB(k);
    b = Math.imul(rotl(b, 17), 5) + 0x0bcaa747;
  }
  if (i < to) {
    // An odd trailing code unit: mixed in without the block step, as murmur3's tail.
    const k = text.charCodeAt(i);
    a ^= mixA(k);
    b ^= mixB(k);
  }
  const length = to - from;
  a ^= length;
  b ^= length;
  a = (a + b) | 0;
  b = (b + a) | 0;
  a = fmix32(a);
  b = fmix32(b);
  a = (a + b) | 0;
  b = (b + a) | 0;
  return (b >>> (32 - LANE_B_BITS)) * TWO_32 + (a >>> 0);
}

function mixA(k: number): number {
  return Math.imul(rotl(Math.imul(k, 0xcc9e2d51), 15), 0x1b873593);
}

function mixB(k: number): number {
  return Math.imul(rotl(Math.imul(k, 0x38b34ae5), 16), 0xa1e38b93);
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

/** murmur3's finaliser: every input bit affects every output bit. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}
