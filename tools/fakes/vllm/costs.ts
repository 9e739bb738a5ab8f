/**
 * The fake replica's cost model, all of it:
 *
 *   TTFT       = queueing (until admitted)
 *              + adapter load still outstanding at admission (loraLoadMs, if not loaded)
 *              + prefill: prefillOverheadMs + prefillMsPerToken × uncached prompt tokens of
 *                work, served at 1/n speed while n requests prefill at once (prefill.ts)
 *   each later output token
 *              = decodeMsPerToken + decodeMsPerExtraSeq × (running requests − 1)
 *   end-to-end = TTFT + Σ the later tokens' costs
 *
 * The prefill produces the first output token, as in vLLM. Prefills share the engine's
 * compute, so they slow each other; decode slows with the running count read when each
 * chunk of tokens starts.
 */
import type { VllmConfig } from "./options";

export function prefillMs(c: VllmConfig, uncachedTokens: number): number {
  return c.prefillOverheadMs + c.prefillMsPerToken * uncachedTokens;
}

export function decodeMs(c: VllmConfig, tokens: number, running: number): number {
  return tokens * (c.decodeMsPerToken + c.decodeMsPerExtraSeq * Math.max(0, running - 1));
}
