/**
 * The upper bound on prefix-cache hit rate for a request sequence: one cache of
 * unlimited size sees every request in order, so every block seen before is a hit.
 * Prompts are cut exactly as the fake replica cuts them (its ChatML template, 4 bytes
 * a token, chained block keys: tools/fakes/vllm/tokens.ts), and it keeps the replica's one
 * rule on reuse: the last prompt token is always computed, so a fully cached prompt
 * still recomputes its last block (tools/fakes/vllm/engine.ts, schedule).
 *
 * No placement of requests on replicas can beat it: a fleet's caches are finite, split,
 * and miss what two requests compute at the same time.
 */
import { renderChat, tokenize } from "../../tools/fakes/vllm/tokens";
import type { ChatRequest } from "./workloads";

export interface HitCount {
  /** Prompt tokens served from cache. */
  cached: number;
  /** Prompt tokens in all. */
  prompt: number;
}

/** Hits of prompts (already rendered to text) against one unbounded cache, in order. */
export function oracleHits(prompts: Iterable<string>, blockSize: number): HitCount {
  const seen = new Set<string>();
  let cached = 0;
  let prompt = 0;
  for (const text of prompts) {
    const { tokens, blockKeys } = tokenize(text, blockSize, { lora: null, cacheSalt: null });
    let hit = 0;
    while (hit < blockKeys.length && seen.has(blockKeys[hit]!)) hit++;
    cached += Math.min(hit, Math.floor((tokens - 1) / blockSize)) * blockSize;
    prompt += tokens;
    for (const key of blockKeys) seen.add(key);
  }
  return { cached, prompt };
}

/** The oracle's hit rate for chat requests as the fake replica renders them. */
export function oracleHitRate(requests: readonly ChatRequest[], blockSize: number): number {
  const { cached, prompt } = oracleHits(
    requests.map((r) => renderChat(r.messages)),
    blockSize,
  );
  return prompt === 0 ? 0 : cached / prompt;
}
