import type { Percentiles } from "./types";

const RANK_EPSILON = 1e-9; // p·n/100 is a few ulps off an integer for p like 99.9; real ranks are ≥ 1e-9 away from the next integer below

/** The key a percentile is stored under: 50 → "p50", 99.9 → "p99.9". */
export function percentileKey(p: number): string {
  return `p${p}`;
}

/**
 * Percentiles by the nearest-rank method: on an ascending copy of `values`, percentile p
 * is the value at rank ⌈p/100 × n⌉ (1-based, at least 1). Every answer is a value that
 * was observed, never an interpolation, so a p99 TTFT is a latency some request really
 * had. No values: an empty record.
 */
export function percentilesOf(values: readonly number[], ps: readonly number[]): Percentiles {
  const out: Percentiles = {};
  if (values.length === 0) return out;
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  for (const p of ps) {
    const rank = Math.min(n, Math.max(1, Math.ceil((p * n) / 100 - RANK_EPSILON)));
    out[percentileKey(p)] = sorted[rank - 1]!;
  }
  return out;
}

/**
 * The value of percentile `p` from a record that may not hold it (it holds only the
 * configured envelope percentiles, and raw samples are not at hand): its own key, else
 * the nearest stored percentile above p, else the largest stored. Erring upward keeps a
 * latency SLO check or an output prediction on the pessimistic side. Undefined when the
 * record is empty.
 */
export function percentileAtOrAbove(values: Percentiles, p: number): number | undefined {
  const exact = values[percentileKey(p)];
  if (exact !== undefined) return exact;
  let above: { p: number; value: number } | undefined;
  let largest: { p: number; value: number } | undefined;
  for (const [key, value] of Object.entries(values)) {
    const stored = key.length > 1 && key.startsWith("p") ? Number(key.slice(1)) : NaN;
    if (!Number.isFinite(stored)) continue;
    if (stored >= p && (!above || stored < above.p)) above = { p: stored, value };
    if (!largest || stored > largest.p) largest = { p: stored, value };
  }
  return (above ?? largest)?.value;
}
