/**
 * How large a number RouteWise believes. Every number that crosses into it (a client's
 * max_tokens, a provider's usage, an operator's calibration sample, a usage API's
 * answer, a row read back from storage) is checked against these, so no arithmetic on
 * them can overflow to Infinity or turn into NaN: costs, latencies and sums of a few
 * thousand samples stay far inside a double's exact range.
 */
import { MAX_REQUEST_MS } from "../config/bounds";
import type { LatencySample } from "./types";

// Shared with the config's bounds, which own them: the config's deadlines and quota limits are the same quantities.
export { MAX_OUTPUT_TOKENS_ASKED, MAX_QUOTA_UNITS, MAX_REQUEST_MS } from "../config/bounds";

/** Prompt, output or cached tokens of one request: ten times the largest context window sold today. */
export const MAX_TOKENS_PER_REQUEST = 10_000_000;
/** An operator's calibration sample's TTFT is at least this, ms: a 0 would make a `percentile` hedge fire at once, paying twice for every request. */
export const MIN_SEEDED_TTFT_MS = 1;
/** How far in the future a time may be, ms: clocks of an operator's logs, a provider and the Worker may differ by this much. */
export const CLOCK_SKEW_MS = 60_000;

/** A number in [0, max] (finite). */
export function inRange(x: unknown, max: number): x is number {
  return typeof x === "number" && x >= 0 && x <= max;
}

/** A token count an upstream may be believed on: a whole number from 0 to MAX_TOKENS_PER_REQUEST. */
export function isTokenCount(x: unknown): x is number {
  return inRange(x, MAX_TOKENS_PER_REQUEST) && Number.isInteger(x);
}

/**
 * Whether a latency sample can be believed at `now`: finite times and token counts
 * within their bounds, and a finish time not in the future (a future sample would never
 * age out of the envelope's window). Samples that fail are dropped, wherever they come
 * from. (A total below the TTFT is a clock glitch and cached tokens above the prompt a
 * provider's odd report, not broken numbers: the envelope reads them as 0 ms per token
 * and a cached share of 1.)
 */
export function plausibleSample(s: LatencySample, now: number): boolean {
  return (
    inRange(s.at, now + CLOCK_SKEW_MS) &&
    inRange(s.ttftMs, MAX_REQUEST_MS) &&
    inRange(s.totalMs, MAX_REQUEST_MS) &&
    inRange(s.promptTokens, MAX_TOKENS_PER_REQUEST) &&
    inRange(s.outputTokens, MAX_TOKENS_PER_REQUEST) &&
    inRange(s.cachedTokens, MAX_TOKENS_PER_REQUEST)
  );
}
