/** The RouteWise bench's markdown: the table, lines comparing rows, and the doc around them. */
import { pct, type RunInfo as QualityRunInfo } from "../quality/report";
import type { RowResult } from "./measure";
import type { Options } from "./options";
import { PROVIDER_IDS, type ProviderSpec } from "./providers";
import type { Row } from "./rows";

export interface Measured {
  row: Row;
  result: RowResult;
}

const HEADER = ["row", "$ per 1k req", "vs fixed 60/40", "p50 ms", "p99 ms", "TTFT p50", "TTFT p99", "req/s", "errors", "answered cheap/fast/sub/slots", "sub tokens (windows)", "quota 429s", "slot 429s", "hedges", "router spend vs providers"];

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "–");
const dollars = (x: number) => (Number.isFinite(x) ? `$${x.toFixed(3)}` : "–");
const signedPct = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%` : "–");

/** The row every other is compared with: the seed's fixed 60/40 split, when it ran. */
export function baselineOf(rows: readonly Measured[]): Measured | undefined {
  return rows.find((m) => m.row.name === "fixed-60-40");
}

/** Shares of successful answers per provider, in PROVIDER_IDS order, as whole percentages. */
export function shares(answeredBy: Record<string, number>): string {
  const total = Object.values(answeredBy).reduce((a, b) => a + b, 0);
  if (total === 0) return "–";
  const extra = Object.keys(answeredBy).filter((k) => !(PROVIDER_IDS as readonly string[]).includes(k));
  const main = PROVIDER_IDS.map((id) => `${Math.round(((answeredBy[id] ?? 0) / total) * 100)}`).join("/");
  return extra.length === 0 ? `${main}%` : `${main}% (+${extra.map((k) => `${answeredBy[k]} ${k}`).join(", ")})`;
}

/** The router's spend for the row against the providers' (RouteWise rows); "–" for a pool, which keeps no spend. */
export function spendCheck(r: RowResult): string {
  if (r.router === null) return "–";
  if (r.spend === 0) return r.router.spend === 0 ? "both 0" : `router ${dollars(r.router.spend)}, providers 0`;
  return signedPct(r.router.spend / r.spend - 1);
}

/** Tokens the quota provider billed, and how many of its windows the row's load touched (the load starts at a window's start). */
export function quotaUse(r: RowResult, quotaWindowS: number): string {
  const windows = Math.max(1, Math.ceil(r.elapsedMs / (quotaWindowS * 1000)));
  return `${r.quotaTokensUsed.toLocaleString("en-US")} (${windows})`;
}

export function table(rows: readonly Measured[], quotaWindowS: number): string[] {
  const base = baselineOf(rows)?.result;
  const lines = [`| ${HEADER.join(" | ")} |`, `|${HEADER.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`];
  for (const { row, result: r } of rows) {
    const errors = r.errors === 0 ? "0" : `${r.errors} (${Object.entries(r.errorKinds).map(([k, n]) => `${n} ${k}`).join(", ")})`;
    const vs = base && base.spendPer1k > 0 ? `${(r.spendPer1k / base.spendPer1k).toFixed(2)}x` : "–";
    const hedges = r.router === null ? `${r.hedges}` : `${r.hedges} (${r.router.hedgesFired})`;
    lines.push(
      `| ${row.label} | ${dollars(r.spendPer1k)} | ${vs} | ${ms(r.latencyP50)} | ${ms(r.latencyP99)} | ${ms(r.ttftP50)} | ${ms(r.ttftP99)} | ${r.rps.toFixed(1)} | ${errors} | ` +
        `${shares(r.answeredBy)} | ${quotaUse(r, quotaWindowS)} | ${r.quota429} | ${r.concurrency429} | ${hedges} | ${spendCheck(r)} |`,
    );
  }
  return lines;
}

/**
 * One line per row against the fixed 60/40 split: spend and p99, the facts the bench is
 * for. Written from the numbers, so they are true of whatever run produced them.
 */
export function comparisons(rows: readonly Measured[]): string[] {
  const base = baselineOf(rows);
  if (!base) return [];
  const b = base.result;
  return rows
    .filter((m) => m !== base)
    .map(({ row, result: r }) => {
      const spend = b.spendPer1k > 0 ? `${pct(r.spendPer1k / b.spendPer1k)} of its spend` : "spend –";
      const p99 = `p99 ${ms(r.latencyP99)} ms against ${ms(b.latencyP99)} (${signedPct(r.latencyP99 / b.latencyP99 - 1)})`;
      const notes = [r.quota429 > 0 ? `${r.quota429} quota 429s at the provider` : "", r.concurrency429 > 0 ? `${r.concurrency429} slot 429s` : "", r.hedges > 0 ? `${r.hedges} hedges` : "", r.errors > 0 ? `${r.errors} errors` : ""].filter(Boolean);
      return `- **${row.label}** vs fixed 60/40: ${spend}, ${p99}${notes.length ? `; ${notes.join(", ")}` : ""}.`;
    });
}

/** As the quality bench's, with the load average at the end too and nothing skipped. */
export type RunInfo = Omit<QualityRunInfo, "skipped"> & { loadAverageEnd: string };

export function knobLines(o: Options, specs: readonly ProviderSpec[]): string[] {
  return [
    ...specs.map((s) => `- provider \`${s.id}\`: ${s.about}`),
    `- load: ${o.concurrency} closed-loop clients, ${o.requests} streamed chat requests per row (\`stream_options.include_usage\`), 200-1,800-character questions, max_tokens 16-64, seed ${o.seed}; the same requests in the same order for every row`,
    `- router: src/index.ts on workerd (tools/cli/runtime.ts startRouter, direct socket), shared state on, session affinity off; a fresh router and fresh providers for every row`,
    `- RouteWise rows: calibrated with ${o.probes} probes per route (\`envelope_min_samples: ${o.probes}\`), probe tokens left out of the spend; quota polled every 5 s; fixed rows: a \`weighted\` pool with the router's default retries (429 included) and circuit breakers`,
    `- the hedge row: \`latency_hedge_mode: slo\`, \`latency_slo_ms\` 3x cheap's usual TTFT, \`latency_slo_percentile: 50\`: the SLO filter judges routes by their median TTFT, so cheap stays in play (at the default p95 its 10% slow tail would fail the SLO and the row would show the filter, not the hedge)`,
    `- every row's load starts at a quota window boundary, so each starts with a full quota`,
  ];
}

export const COLUMNS = [
  "- **$ per 1k req**: the providers' billed tokens (each fake provider's own count, hedge losers' generated tokens included) × the prices above, per 1,000 requests sent. `sub` and `slots` cost nothing per token.",
  "- **vs fixed 60/40**: that, divided by the fixed 60/40 row's.",
  "- **p50 / p99 ms**: client-side, from sending a request to the end of its stream; **TTFT** to the first SSE event with content. Successful requests only; nearest-rank percentiles.",
  "- **req/s**: successful requests ÷ time from the first request sent to the last answer; a faster row finishes its requests sooner (closed loop).",
  "- **errors**: non-200 answers, broken streams or no answer within 30 s.",
  "- **answered cheap/fast/sub/slots**: share of successful answers by the provider that answered (the router's `x-switchyard-route` or `x-switchyard-replica`).",
  "- **sub tokens (windows)**: tokens the quota provider billed in the row, and how many of its windows the row's load touched; the free capacity on offer was the quota × that count, so a row that finishes sooner had less of it.",
  "- **quota 429s / slot 429s**: 429s the `sub` and `slots` providers sent (the router retried them elsewhere; a client sees them only as latency or, if every retry fails, as an error).",
  "- **hedges**: requests answered with `x-switchyard-hedge: fired`; in brackets the router's `switchyard_routewise_hedges_total{event=\"fired\"}` for the row.",
  "- **router spend vs providers**: the router's `switchyard_routewise_spend_total` for the row against the providers' truth; RouteWise rows only.",
];

export function doc(info: RunInfo, o: Options, specs: readonly ProviderSpec[], rows: readonly Measured[]): string {
  return [
    "# RouteWise against a fixed-ratio split",
    "",
    "Spend and tail latency of RouteWise (cost-aware provider routing, issue 10) against fixed-ratio splits over the same fake metered providers (tools/fakes/fake-provider.ts), behind the real router. Produced by `npm run bench:routewise`; see bench/routewise/.",
    "",
    "```",
    info.command,
    "```",
    "",
    `- date: ${info.date}; machine: nproc ${info.nproc}, Node ${info.node}, load average ${info.loadAverage} at the start and ${info.loadAverageEnd} at the end; run time ${Math.round(info.seconds)} s`,
    ...knobLines(o, specs),
    "",
    "## Results",
    "",
    ...table(rows, o.quotaWindowS),
    "",
    ...comparisons(rows),
    "",
    "## Columns",
    "",
    ...COLUMNS,
    "",
  ].join("\n");
}
