/** GET /admin/usage's answer (docs/limits.md, "Usage"), as far as the table reads it. */
export interface UsageAnswer {
  at: string;
  filter: Record<string, string>;
  buckets: {
    bucket: string;
    usage: Record<string, { limit: number; window: string; spent: number; held_by_isolates: number; remaining: number; resets_at: string | null }>;
  }[];
}

const HEADER = ["BUCKET", "DIMENSION", "WINDOW", "LIMIT", "SPENT", "HELD", "REMAINING", "RESETS IN"];
const NUMERIC_FROM = 3; // LIMIT onwards are right-aligned, so digits line up
const SIGNIFICANT_DIGITS = 6; // spend is a float sum: 0.06, not 0.060000000000000005

/** One row per bucket and dimension, columns padded to their widest cell; "resets in" is counted from the router's own `at`. */
export function usageTable(answer: UsageAnswer): string {
  if (answer.buckets.length === 0) {
    const filter = Object.entries(answer.filter).map(([k, v]) => `${k}=${v}`).join(" ");
    return `no limit applies${filter ? ` to ${filter}` : ""}\n`;
  }
  const now = Date.parse(answer.at);
  const rows = answer.buckets.flatMap(({ bucket, usage }) =>
    Object.entries(usage).map(([dim, u]) => [
      bucket,
      dim,
      u.window,
      amount(u.limit),
      amount(u.spent),
      amount(u.held_by_isolates),
      amount(u.remaining),
      u.resets_at === null ? "-" : duration(Date.parse(u.resets_at) - now),
    ]),
  );
  const table = [HEADER, ...rows];
  const widths = HEADER.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  return table.map((row) => row.map((cell, i) => (i >= NUMERIC_FROM ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join("  ").trimEnd()).join("\n") + "\n";
}

function amount(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(SIGNIFICANT_DIGITS)));
}

/** `37s`, `6m0s`, `3h12m`, `12d4h`: OpenAI's reset-header style, two units at most. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}
