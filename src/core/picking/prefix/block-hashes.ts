import { hash53 } from "../../../lib/hash53";

/**
 * Chained block hashes of a prompt, as GAIE's approximate prefix index computes them
 * (approximateprefix/hashing.go): the text is cut into blocks of `blockChars`; the chain
 * starts from a hash of the seed (model, LoRA adapter, cache salt) and each block's hash
 * is seeded with the previous one, so h_i identifies the whole text up to the end of
 * block i under that seed. Two prompts share h_0..h_k exactly when they share their first
 * k+1 blocks (and seed); one changed character changes its block's hash and every later
 * one. A different model or adapter changes h_0, so prefixes never match across them.
 *
 * Only full blocks are hashed: an engine caches full KV blocks only (vLLM's prefix cache
 * hashes full blocks; GAIE v1.0.0 also skipped the partial one), so a trailing partial
 * block could never be a cache hit. A text shorter than one block gives no hashes (no
 * prefix scoring), as in GAIE.
 *
 * Collision odds (53-bit values, hash53.ts): a lookup of k hashes against an index of N
 * distinct entries falsely matches one with probability about k·N / 2^53. At GAIE's
 * largest defaults, k = 256 blocks and N = 10 replicas × 31,250 blocks, that is 8.9e-9
 * per request: one spurious block of credit per ~10^8 requests. A false match costs a
 * routing preference, never correctness. Across the whole index, two distinct blocks
 * share a hash with probability about N²/2^54 = 5e-6.
 */

/** Characters per block: 16 tokens × 4 characters per token (GAIE: blockSizeTokens 16, averageCharactersPerToken 4). */
export const DEFAULT_BLOCK_CHARS = 64;
/** Blocks hashed per request: GAIE's maxPrefixBlocksToMatch, 16,384 characters ≈ 4,096 tokens; bounds the CPU per request. */
export const DEFAULT_MAX_BLOCKS = 256;

const SEED_SEPARATOR = "\u0000"; // cannot occur in a model name from JSON config

/**
 * The chain's seed: the base model, the LoRA adapter (an adapter's KV differs from its
 * base model's) and vLLM's `cache_salt` (a tenant's private cache namespace). Parts are
 * joined with NUL so ("ab", "c") and ("a", "bc") differ.
 */
export function hashSeed(model: string, adapter: string | null = null, cacheSalt: string | null = null): string {
  return [model, adapter ?? "", cacheSalt ?? ""].join(SEED_SEPARATOR);
}

/**
 * Chained hashes of the first `maxBlocks` full blocks of `text`. Values are integers in
 * [0, 2^53). Pure; O(min(text.length, blockChars × maxBlocks)).
 */
export function blockHashes(seed: string, text: string, blockChars = DEFAULT_BLOCK_CHARS, maxBlocks = DEFAULT_MAX_BLOCKS): number[] {
  if (!Number.isInteger(blockChars) || blockChars <= 0) throw new RangeError(`blockHashes: blockChars must be a positive integer, got ${blockChars}`);
  const blocks = Math.min(Math.floor(text.length / blockChars), Math.max(0, Math.floor(maxBlocks)));
  const hashes = new Array<number>(blocks);
  let previous = hash53(seed);
  for (let i = 0; i < blocks; i++) {
    previous = hash53(text, i * blockChars, (i + 1) * blockChars, previous);
    hashes[i] = previous;
  }
  return hashes;
}
