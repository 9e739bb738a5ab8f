/**
 * Heap bytes per (replica, block) entry of the approximate prefix index, the figure its
 * memory bound is stated in (src/core/picking/prefix/prefix-index.ts). Fills 8 replicas to
 * GAIE's default capacity with distinct prompts, each inserted on 1, 2 or 4 replicas.
 *
 *   node --expose-gc --import tsx bench/prefix-index-memory.ts
 */
import { blockHashes } from "../src/core/picking/prefix/block-hashes.ts";
import { DEFAULT_LRU_CAPACITY_BLOCKS, PrefixIndex } from "../src/core/picking/prefix/prefix-index.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");
const REPLICAS = 8;

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const kept: PrefixIndex[] = [];
for (const sharedBy of [1, 2, 4]) {
  const before = heapUsed();
  const index = new PrefixIndex(DEFAULT_LRU_CAPACITY_BLOCKS);
  for (let prompt = 0; index.size < REPLICAS * DEFAULT_LRU_CAPACITY_BLOCKS * 0.999; prompt++) {
    const hashes = blockHashes("model", `prompt ${prompt} ${"x".repeat(64 * 64)}`, 64, 64);
    for (let s = 0; s < sharedBy; s++) index.add(`replica-${(prompt + s) % REPLICAS}`, hashes);
  }
  const bytes = heapUsed() - before;
  kept.push(index); // alive until after the measurement
  console.log(`blocks held by ${sharedBy} replica(s): ${index.size} entries, ${(bytes / index.size).toFixed(1)} bytes/entry`);
}
