import { known } from "../vllm-metrics";
import { DEFAULT_BLOCK_CHARS } from "./block-hashes";

/**
 * How many blocks each replica's prefix index remembers (prefix-index.ts): as many as the
 * replica's engine can hold, so the index forgets a prompt about when the engine evicts it.
 *
 * The engine says its size in `vllm:cache_config_info`: `num_gpu_blocks` KV blocks of
 * `block_size` tokens. The router's blocks are not tokens: it cuts the rendered prompt into
 * blocks of DEFAULT_BLOCK_CHARS characters (block-hashes.ts), which at CHARS_PER_TOKEN is
 * 16 tokens, vLLM's default block size on CUDA. So a replica holds
 *
 *     router blocks = floor(num_gpu_blocks × block_size × CHARS_PER_TOKEN / block_chars)
 *
 * e.g. 480 blocks of 16 tokens = 7,680 tokens = 30,720 characters = 480 router blocks, and
 * 2,048 blocks of 32 tokens = 4,096 router blocks. The conversion is only as good as 4
 * characters a token is for the traffic (English text with a BPE tokenizer is about that;
 * code and other languages use fewer characters per token, so the engine then holds fewer
 * characters than the index assumes). It counts the whole KV cache as prefix cache: the
 * engine also keeps running requests' output and partial blocks there, and a prompt longer
 * than the router hashes (DEFAULT_MAX_BLOCKS) occupies more engine blocks than the index
 * records; both make the engine evict a little sooner than the index.
 *
 * Bounds: the engine's numbers are ints below 2^31 (vllm-metrics.ts), so the product is
 * exact as a double; the result is at least 1 and at most engineCeilingBlocks(replicas),
 * the memory budget of the isolate's index for the pool.
 */

/** Characters per token when mapping engine tokens to router blocks: GAIE's averageCharactersPerToken, and DEFAULT_BLOCK_CHARS = 16 tokens × 4. */
export const CHARS_PER_TOKEN = 4;

/** Per replica, when neither the config nor the engine says: ~100 B an entry (prefix-index.ts), so 8,192 × 32 replicas ≈ 26 MB of a 128 MB isolate. */
export const DEFAULT_INDEX_CAPACITY_BLOCKS = 8_192;

/** Entries an engine-sized index may hold across a pool's replicas: the default's 8,192 × 32 replicas, ≈ 26 MB at ~100 B an entry. */
export const INDEX_POOL_BUDGET_ENTRIES = 262_144;

/** Where a replica's index capacity came from: `index_capacity_blocks`, its engine's cache_config_info, or the default. */
export type IndexSizedBy = "config" | "engine" | "default";

export interface IndexSize {
  blocks: number;
  sizedBy: IndexSizedBy;
}

/** What the sizing reads of a replica's metrics (ReplicaMetrics has both). */
export interface EngineCacheInfo {
  numGpuBlocks: number | null;
  blockSize: number | null;
}

/**
 * The router blocks an engine of `numGpuBlocks` blocks of `blockSize` tokens holds (the
 * formula above), at least 1; null when the engine does not say (either number missing,
 * not finite, or below 1: vLLM writes no usable size before it has profiled its memory).
 */
export function engineIndexBlocks(info: EngineCacheInfo, blockChars = DEFAULT_BLOCK_CHARS): number | null {
  const { numGpuBlocks: blocks, blockSize: tokens } = info;
  if (!known(blocks) || !known(tokens) || blocks < 1 || tokens < 1) return null;
  return Math.max(1, Math.floor((blocks * tokens * CHARS_PER_TOKEN) / blockChars));
}

/**
 * The most blocks an engine may size one replica's index to in a pool of `replicas`: the
 * pool's budget shared out, and never below the default (a large pool of engine-sized
 * replicas costs no more than the same pool at the default did).
 */
export function engineCeilingBlocks(replicas: number): number {
  return Math.max(DEFAULT_INDEX_CAPACITY_BLOCKS, Math.floor(INDEX_POOL_BUDGET_ENTRIES / Math.max(1, replicas)));
}

/**
 * One replica's index capacity: the configured `index_capacity_blocks` when set (an
 * override, whatever the engine says); else what its engine holds (bounded above); else
 * the default.
 */
export function replicaIndexSize(configured: number | null, engine: EngineCacheInfo | null, replicas: number, blockChars = DEFAULT_BLOCK_CHARS): IndexSize {
  if (configured !== null) return { blocks: configured, sizedBy: "config" };
  const blocks = engine === null ? null : engineIndexBlocks(engine, blockChars);
  if (blocks === null) return { blocks: DEFAULT_INDEX_CAPACITY_BLOCKS, sizedBy: "default" };
  return { blocks: Math.min(blocks, engineCeilingBlocks(replicas)), sizedBy: "engine" };
}
