/** How each replica's prefix index is sized: from its engine's KV cache, converted to the router's blocks, bounded. */
import { describe, expect, it } from "vitest";
import { DEFAULT_BLOCK_CHARS } from "../../src/core/picking/prefix/block-hashes";
import {
  CHARS_PER_TOKEN,
  DEFAULT_INDEX_CAPACITY_BLOCKS,
  INDEX_POOL_BUDGET_ENTRIES,
  engineCeilingBlocks,
  engineIndexBlocks,
  replicaIndexSize,
} from "../../src/core/picking/prefix/index-sizing";

const MAX_INT_LABEL = 2 ** 31 - 1; // the largest block count or size vllm-metrics.ts accepts

describe("engineIndexBlocks: engine tokens in router blocks", () => {
  it("is one router block per engine block at vLLM's default 16 tokens (64 characters at 4 a token)", () => {
    expect(DEFAULT_BLOCK_CHARS / CHARS_PER_TOKEN).toBe(16);
    expect(engineIndexBlocks({ numGpuBlocks: 480, blockSize: 16 })).toBe(480);
  });

  it("scales with the engine's block size: tokens held × 4 characters ÷ 64", () => {
    expect(engineIndexBlocks({ numGpuBlocks: 2_048, blockSize: 32 })).toBe(4_096);
    expect(engineIndexBlocks({ numGpuBlocks: 100, blockSize: 8 })).toBe(50);
    expect(engineIndexBlocks({ numGpuBlocks: 7, blockSize: 4 })).toBe(1); // 28 tokens = 112 characters: one full router block
    expect(engineIndexBlocks({ numGpuBlocks: 480, blockSize: 16 }, 128)).toBe(240); // a router cutting 128-character blocks
  });

  it("is at least 1 when the engine holds anything, and null when it says nothing usable", () => {
    expect(engineIndexBlocks({ numGpuBlocks: 3, blockSize: 1 })).toBe(1); // 12 characters: under a block, still 1
    for (const info of [
      { numGpuBlocks: null, blockSize: 16 },
      { numGpuBlocks: 480, blockSize: null },
      { numGpuBlocks: 0, blockSize: 16 },
      { numGpuBlocks: 480, blockSize: 0 },
      { numGpuBlocks: Number.NaN, blockSize: 16 },
      { numGpuBlocks: Number.POSITIVE_INFINITY, blockSize: 16 },
      { numGpuBlocks: -5, blockSize: 16 },
    ]) {
      expect(engineIndexBlocks(info), JSON.stringify(info)).toBeNull();
    }
  });

  it("stays a finite integer at the largest numbers an engine may write", () => {
    const blocks = engineIndexBlocks({ numGpuBlocks: MAX_INT_LABEL, blockSize: MAX_INT_LABEL })!;
    expect(Number.isFinite(blocks)).toBe(true);
    expect(Number.isInteger(blocks)).toBe(true);
  });
});

describe("replicaIndexSize", () => {
  const engine = { numGpuBlocks: 480, blockSize: 16 };

  it("takes the engine's size when the config sets none", () => {
    expect(replicaIndexSize(null, engine, 4)).toEqual({ blocks: 480, sizedBy: "engine" });
  });

  it("falls back to the default (8,192) while the engine does not say", () => {
    expect(DEFAULT_INDEX_CAPACITY_BLOCKS).toBe(8_192);
    expect(replicaIndexSize(null, null, 4)).toEqual({ blocks: 8_192, sizedBy: "default" });
    expect(replicaIndexSize(null, { numGpuBlocks: null, blockSize: 16 }, 4)).toEqual({ blocks: 8_192, sizedBy: "default" });
  });

  it("lets index_capacity_blocks override the engine", () => {
    expect(replicaIndexSize(1_000, engine, 4)).toEqual({ blocks: 1_000, sizedBy: "config" });
    expect(replicaIndexSize(1_000, null, 4)).toEqual({ blocks: 1_000, sizedBy: "config" });
  });

  it("bounds an engine-sized index by the pool's budget, never below the default", () => {
    const huge = { numGpuBlocks: MAX_INT_LABEL, blockSize: MAX_INT_LABEL };
    expect(engineCeilingBlocks(4)).toBe(INDEX_POOL_BUDGET_ENTRIES / 4);
    expect(replicaIndexSize(null, huge, 4)).toEqual({ blocks: 65_536, sizedBy: "engine" });
    expect(replicaIndexSize(null, huge, 1)).toEqual({ blocks: INDEX_POOL_BUDGET_ENTRIES, sizedBy: "engine" });
    expect(replicaIndexSize(null, huge, 0)).toEqual({ blocks: INDEX_POOL_BUDGET_ENTRIES, sizedBy: "engine" });
    expect(replicaIndexSize(null, huge, 64)).toEqual({ blocks: DEFAULT_INDEX_CAPACITY_BLOCKS, sizedBy: "engine" }); // 262,144 / 64 = 4,096 < the default
    // Llama-3-8B on an H100 (~31,250 blocks of 16 tokens) fits whole in a pool of 8.
    expect(replicaIndexSize(null, { numGpuBlocks: 31_250, blockSize: 16 }, 8)).toEqual({ blocks: 31_250, sizedBy: "engine" });
  });
});
