/**
 * LoRA adapters. vLLM serves an adapter under its own model name and reports adapters by
 * that name in `vllm:lora_requests_info` (running_lora_adapters, waiting_lora_adapters),
 * while its KV cache is keyed by base model plus adapter. Config gives the map from a
 * requested model name to its base model and adapter name (GAIE's BBR plugin
 * `base-model-to-header` does the same lookup from ConfigMaps).
 */
export interface AdapterRef {
  /** The base model the adapter is loaded onto; the pool serves this model. */
  base: string;
  /** The adapter's name as the engine reports it in its LoRA metrics. */
  adapter: string;
}

/** Requested model name → base model and adapter. A name not in it is a base model. */
export type AdapterMap = ReadonlyMap<string, AdapterRef>;

export interface CacheTarget {
  base: string;
  adapter: string | null;
}

/** The base model and LoRA adapter (null for a base model) a request for `model` needs. */
export function adapterOf(model: string, adapters: AdapterMap): CacheTarget {
  const ref = adapters.get(model);
  return ref === undefined ? { base: model, adapter: null } : { base: ref.base, adapter: ref.adapter };
}
