/** The bench's numbers as text: rounds pooled per target, the table, and ratio lines. */
import { mergeSorted, summarise, type LoadResult } from "./load";

export interface Run {
  round: number;
  target: string;
  result: LoadResult;
  /** CPU time the serving process spent during the measured window; NaN when unknown. */
  cpuMs: number;
}

export interface Pooled {
  target: string;
  count: number;
  errors: number;
  errorKinds: Record<string, number>;
  rps: number;
  p50: number;
  p99: number;
  /** The serving process's CPU time per request (all rounds pooled); NaN when unknown. */
  cpuUsPerRequest: number;
}

/** Rounds of one target pooled: requests and time summed, percentiles over all samples. */
export function pool(runs: Run[], target: string): Pooled {
  const runsOf = runs.filter((r) => r.target === target);
  const mine = runsOf.map((r) => r.result);
  const count = mine.reduce((n, r) => n + r.count, 0);
  const ok = mine.reduce((n, r) => n + r.ok, 0);
  const seconds = mine.reduce((n, r) => n + r.elapsedMs, 0) / 1000;
  const errorKinds: Record<string, number> = {};
  for (const r of mine) for (const [k, v] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + v;
  const { p50, p99 } = summarise(mergeSorted(mine.map((r) => r.latenciesMs)));
  return {
    target,
    count,
    errors: mine.reduce((n, r) => n + r.errors, 0),
    errorKinds,
    rps: seconds > 0 ? ok / seconds : 0,
    p50,
    p99,
    cpuUsPerRequest: count > 0 ? (runsOf.reduce((n, r) => n + r.cpuMs, 0) * 1000) / count : Number.NaN,
  };
}

/**
 * One line per target, with what each adds over `base` (default the first row, direct).
 * `title` heads the target column; the "req/s vs direct" column is left out when the
 * base is not direct (the concurrency-1 table measures latency, not throughput).
 */
export function table(rows: Pooled[], opts: { base?: Pooled; title?: string } = {}): string[] {
  const base = opts.base ?? rows[0]!;
  const vsDirect = opts.base === undefined;
  const header = [opts.title ?? "target", "requests", "req/s", "p50 ms", "p99 ms", "errors", ...(vsDirect ? ["req/s vs direct"] : []), "added p50 ms", "added p99 ms", "CPU µs/req"];
  const cells = rows.map((r) => [
    r.target,
    String(r.count),
    fmtRps(r.rps),
    fmt(r.p50),
    fmt(r.p99),
    String(r.errors),
    ...(vsDirect ? [r === base ? "1.00x" : ratio(r.rps, base.rps)] : []),
    r === base ? "-" : signed(r.p50 - base.p50),
    r === base ? "-" : signed(r.p99 - base.p99),
    fmtUs(r.cpuUsPerRequest),
  ]);
  return align([header, ...cells], { rule: true });
}

/** "`label`: 0.66x req/s, added p50 +4.49 ms, added p99 +11.15 ms" for row `a` against row `b`. */
export function comparison(label: string, a: Pooled, b: Pooled): string {
  return `${label}: ${ratio(a.rps, b.rps)} req/s, added p50 ${signed(a.p50 - b.p50)} ms, added p99 ${signed(a.p99 - b.p99)} ms`;
}

/**
 * `a`'s req/s ÷ `b`'s in each round both ran, as " (rounds 0.62x-0.86x)": how far one
 * round's ratio strays from the pooled one; from three rounds on also their median.
 * Empty with fewer than two such rounds.
 */
export function roundSpread(runs: readonly Run[], a: string, b: string): string {
  const rps = (target: string, round: number) => runs.find((r) => r.target === target && r.round === round)?.result.rps;
  const ratios: number[] = [];
  for (const round of new Set(runs.map((r) => r.round))) {
    const [x, y] = [rps(a, round), rps(b, round)];
    if (x !== undefined && y !== undefined && y > 0) ratios.push(x / y);
  }
  if (ratios.length < 2) return "";
  const range = `rounds ${Math.min(...ratios).toFixed(2)}x-${Math.max(...ratios).toFixed(2)}x`;
  // From three rounds on, the median: one round on a machine whose speed jumped moves it less than the pooled ratio.
  return ratios.length < 3 ? ` (${range})` : ` (${range}, median ${median(ratios).toFixed(2)}x)`;
}

export function errorWarnings(rows: Pooled[]): string[] {
  return rows
    .filter((r) => r.errors > 0)
    .map((r) => {
      const kinds = Object.entries(r.errorKinds).map(([k, v]) => `${k} ×${v}`).join(", ");
      return `WARNING: ${r.target} had ${r.errors} errors (${kinds}); its req/s counts successes only`;
    });
}

/** Columns padded to their widest cell; the first column left-aligned, the rest right. */
export function align(rows: string[][], opts: { rule?: boolean } = {}): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const out = rows.map(line);
  if (opts.rule) out.splice(1, 0, line(widths.map((w) => "-".repeat(w))));
  return out;
}

export const fmt = (ms: number) => (Number.isNaN(ms) ? "n/a" : ms.toFixed(2));
export const fmtRps = (rps: number) => rps.toFixed(0);
export const fmtUs = (us: number) => (Number.isFinite(us) ? us.toFixed(0) : "n/a");
export const signed = (ms: number) => (Number.isNaN(ms) ? "n/a" : `${ms >= 0 ? "+" : ""}${ms.toFixed(2)}`);
export const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : "n/a");

/** The middle value (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
