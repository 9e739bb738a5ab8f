/**
 * Defaults and validation for a fake vLLM replica's options, shared by the CLI, fleet
 * control and tests so a bad value is refused the same way everywhere.
 */
import type { FakeVllmOptions, FakeVllmTuning, MetricsMode } from "../fake-vllm-types";

export type VllmConfig = Required<Omit<FakeVllmOptions, "id" | "port">> & { healthy: boolean; metrics: MetricsMode };

export const METRICS_MODES: readonly MetricsMode[] = ["live", "frozen", "failing", "hanging"];

export const DEFAULTS: VllmConfig = {
  model: "fake-vllm-model",
  blockSize: 16, // vLLM's default block size on CUDA
  numGpuBlocks: 2048, // 32K tokens: small enough that a modest benchmark sees eviction
  maxNumSeqs: 256, // vLLM's default max_num_seqs
  prefillMsPerToken: 0.1, // ~10K prompt tokens/s: an 8B model on one large GPU
  prefillOverheadMs: 0,
  decodeMsPerToken: 5, // ~200 tokens/s for a lone sequence
  decodeMsPerExtraSeq: 0.02, // a full batch of 256 roughly doubles the per-token cost
  maxOutputTokens: 4096,
  defaultOutputTokens: 16, // OpenAI's max_tokens default for completions
  streamTokensPerChunk: 1, // vLLM sends one chunk per token
  loras: [],
  maxLora: 1, // vLLM's default --max-loras
  loraLoadMs: 20, // a small adapter from host memory
  seed: 0,
  healthy: true,
  metrics: "live",
};

const POSITIVE_INTS = ["blockSize", "numGpuBlocks", "maxNumSeqs", "maxOutputTokens", "defaultOutputTokens", "streamTokensPerChunk", "maxLora"] as const;
const NON_NEGATIVE = ["prefillMsPerToken", "prefillOverheadMs", "decodeMsPerToken", "decodeMsPerExtraSeq", "loraLoadMs"] as const;
const ADAPTER_NAME = /^[A-Za-z0-9._:/-]+$/; // goes into a comma-separated metric label, so no commas or quotes

const TUNING_ONLY = new Set<string>(["healthy", "metrics"]);
const OPTION_KEYS = new Set<string>([...Object.keys(DEFAULTS).filter((k) => !TUNING_ONLY.has(k)), "id", "port"]);
const TUNING_KEYS = new Set<string>([...NON_NEGATIVE, ...TUNING_ONLY]);

/** Options with defaults filled in; throws an Error naming the first bad field. */
export function resolveOptions(o: FakeVllmOptions = {}): VllmConfig {
  refuseUnknown(o, OPTION_KEYS, "option"); // a misspelt knob would otherwise run silently on its default
  const { id: _id, port: _port, ...rest } = o;
  const c: VllmConfig = { ...DEFAULTS, ...definedOnly(rest), healthy: true, metrics: "live" };
  for (const k of POSITIVE_INTS) if (!Number.isInteger(c[k]) || c[k] < 1) throw new Error(`${k} must be an integer >= 1, got ${String(c[k])}`);
  checkNonNegative(c);
  if (!Number.isInteger(c.seed)) throw new Error(`seed must be an integer, got ${String(c.seed)}`);
  if (typeof c.model !== "string" || !c.model) throw new Error("model must be a non-empty string");
  if (!Array.isArray(c.loras)) throw new Error("loras must be a list of adapter names");
  for (const name of c.loras) {
    if (typeof name !== "string" || !ADAPTER_NAME.test(name)) throw new Error(`lora name ${JSON.stringify(name)} must match ${ADAPTER_NAME}`);
    if (name === c.model) throw new Error(`lora name ${name} is the base model's name`);
  }
  if (new Set(c.loras).size !== c.loras.length) throw new Error("lora names must be distinct");
  return c;
}

/** A tuning applied to a live config; throws before changing anything if a value is bad. */
export function applyTuning(c: VllmConfig, t: FakeVllmTuning): void {
  refuseUnknown(t, TUNING_KEYS, "tuning field");
  const next = { ...c, ...definedOnly(t) };
  checkNonNegative(next);
  if (typeof next.healthy !== "boolean") throw new Error("healthy must be a boolean");
  if (!METRICS_MODES.includes(next.metrics)) throw new Error(`metrics must be one of ${METRICS_MODES.join(", ")}, got ${JSON.stringify(next.metrics)}`);
  Object.assign(c, next);
}

function checkNonNegative(c: VllmConfig): void {
  for (const k of NON_NEGATIVE) if (typeof c[k] !== "number" || !Number.isFinite(c[k]) || c[k] < 0) throw new Error(`${k} must be a number >= 0, got ${String(c[k])}`);
}

function refuseUnknown(o: object, known: Set<string>, what: string): void {
  const unknown = Object.keys(o).find((k) => !known.has(k));
  if (unknown !== undefined) throw new Error(`unknown ${what} ${JSON.stringify(unknown)}`);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
