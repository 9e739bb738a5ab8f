import { plausibleSample } from "./bounds";
import { percentilesOf } from "./percentiles";
import type { Envelope, LatencySample } from "./types";

/**
 * Samples one route keeps, newest first to survive. Bounds one envelope object's storage
 * (2,000 rows × 7 columns per route) and the CPU of its percentile pass (three sorts of
 * 2,000 numbers, well under a millisecond); 2,000 samples still put 20 of them above p99.
 */
export const MAX_SAMPLES_PER_ROUTE = 2_000;

export interface SummaryOptions {
  /** Percentiles to compute, e.g. [50, 90, 95, 99]. */
  percentiles: number[];
  /** Epoch ms the summary is for. */
  now: number;
  /** The envelope window: older samples say nothing about the route now. */
  windowMs: number;
  /** The shorter window `recent` (the SLO check, the hedge delay) is judged over. */
  latencyWindowMs: number;
}

/** A sample counts while it is no older than `windowMs` (a sample exactly at the edge still counts). */
function within(sample: LatencySample, now: number, windowMs: number): boolean {
  return sample.at >= now - windowMs;
}

function mean(values: readonly number[]): number {
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

/**
 * One route's envelope from its samples: percentiles of TTFT, total latency and output
 * tokens over the window, their means, the streaming speed and the cached share of the
 * prompt; `recent` is TTFT over the latency window only. Null when no plausible sample
 * is in the window (the route is unmeasured, and the decision treats it so).
 */
export function summarize(samples: readonly LatencySample[], opts: SummaryOptions): Envelope | null {
  // An implausible sample (a broken number, a time in the future) says nothing, whoever kept it.
  const kept = samples.filter((s) => within(s, opts.now, opts.windowMs) && plausibleSample(s, opts.now));
  if (kept.length === 0) return null;
  const ttft = kept.map((s) => s.ttftMs);
  const total = kept.map((s) => s.totalMs);
  const output = kept.map((s) => s.outputTokens);
  // Per-sample speed, then the mean: a long answer does not outweigh many short ones. A
  // total below the TTFT is a clock glitch, not negative time, so it counts as 0.
  const msPerToken = kept.map((s) => Math.max(0, s.totalMs - s.ttftMs) / Math.max(1, s.outputTokens - 1));
  let prompt = 0;
  let cached = 0;
  for (const s of kept) {
    prompt += s.promptTokens;
    cached += s.cachedTokens;
  }
  const recentTtft = kept.filter((s) => within(s, opts.now, opts.latencyWindowMs)).map((s) => s.ttftMs);
  return {
    samples: kept.length,
    ttftMs: percentilesOf(ttft, opts.percentiles),
    totalMs: percentilesOf(total, opts.percentiles),
    outputTokens: percentilesOf(output, opts.percentiles),
    meanTtftMs: mean(ttft),
    meanTotalMs: mean(total),
    meanPromptTokens: prompt / kept.length,
    meanOutputTokens: mean(output),
    msPerOutputToken: mean(msPerToken),
    cachedRatio: prompt > 0 ? Math.min(1, cached / prompt) : 0, // a provider reporting more cached than prompt tokens caches no more than the prompt
    recent: { samples: recentTtft.length, ttftMs: percentilesOf(recentTtft, opts.percentiles) },
  };
}

/**
 * The samples a route keeps: those in the window, at most `maxSamples` of them, newest
 * kept. `samples` must be in ascending `at` order, as the envelope object stores them;
 * the answer is a tail of it, in the same order.
 */
export function trimSamples(samples: readonly LatencySample[], now: number, windowMs: number, maxSamples: number): LatencySample[] {
  if (!(maxSamples >= 0)) throw new RangeError(`trimSamples: maxSamples must be >= 0, got ${maxSamples}`);
  let first = 0;
  while (first < samples.length && !within(samples[first]!, now, windowMs)) first++;
  first = Math.max(first, samples.length - maxSamples);
  return samples.slice(first);
}
