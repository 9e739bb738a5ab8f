import type { CacheTarget } from "./adapter";
import { blockHashes, DEFAULT_BLOCK_CHARS, DEFAULT_MAX_BLOCKS, hashSeed } from "./block-hashes";
import { promptText } from "./prompt-text";

/** What a policy knows about the request. Built by `requestFeatures` below. */
export interface RequestFeatures {
  /** Chained block hashes of the prompt, seeded with model/adapter/cache salt; [] when too short or unknown. */
  hashes: readonly number[];
  /** The LoRA adapter the request needs, or null for a base model. */
  adapter: string | null;
  /** Where the request entered, as label pairs (e.g. `{ colo: "AMS", region: "weur" }`); {} when unknown. */
  locality: Readonly<Record<string, string>>;
  /** The client asked for a stream (`"stream": true`): its first chunk tells when its prompt has been prefilled. */
  streamed?: boolean;
}

export interface FeatureInput {
  apiPath: string;
  /** The parsed JSON body. */
  body: unknown;
  /** The KV cache the request's model lands in: base model and LoRA adapter (`adapterOf`). */
  target: CacheTarget;
  /** Where the request entered, e.g. `{ colo: request.cf.colo, region: ... }`. */
  locality?: Readonly<Record<string, string>>;
  blockChars?: number;
  maxBlocks?: number;
}

/**
 * Everything a scoring policy needs from a request: its prefix block hashes (seeded with
 * base model, adapter and vLLM's `cache_salt`), its LoRA adapter and its location. Only
 * the text that can be hashed is rendered (blockChars × maxBlocks characters).
 */
export function requestFeatures(input: FeatureInput): RequestFeatures {
  const blockChars = input.blockChars ?? DEFAULT_BLOCK_CHARS;
  const maxBlocks = input.maxBlocks ?? DEFAULT_MAX_BLOCKS;
  const target = input.target;
  const body = input.body as { cache_salt?: unknown } | null;
  const salt = typeof body?.cache_salt === "string" ? body.cache_salt : null;
  const text = promptText(input.apiPath, input.body, blockChars * maxBlocks);
  return {
    hashes: blockHashes(hashSeed(target.base, target.adapter, salt), text, blockChars, maxBlocks),
    adapter: target.adapter,
    locality: input.locality ?? {},
    streamed: (input.body as { stream?: unknown } | null)?.stream === true,
  };
}
