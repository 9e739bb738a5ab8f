/**
 * What a row measured. Spend is the providers' truth: each fake provider counts the
 * tokens it billed (a hedge's loser included, for what it generated before it was cut),
 * priced here with the same per-token prices the router's config has. Latency is the
 * clients' own.
 */
import type { FakeProviderStats } from "../../tools/fakes/fake-provider";
import { parsePrometheusText } from "../../src/lib/prometheus/parse";
import { percentile } from "../load";
import type { Outcome, Run } from "./client";
import type { Price, ProviderSpec } from "./providers";

/** What the bench keeps of one provider's stats after a row. */
export interface ProviderTally {
  id: string;
  tokens: { prompt: number; completion: number; cached: number };
  completed: number;
  aborted: number;
  quotaRejected: number;
  concurrencyRejected: number;
  slow: number;
}

export function tallyOf(stats: FakeProviderStats): ProviderTally {
  const { id, tokens, completed, aborted, quotaRejected, concurrencyRejected, slow } = stats;
  return { id, tokens: { ...tokens }, completed, aborted, quotaRejected, concurrencyRejected, slow };
}

/** Currency for tokens at a price; no price (prepaid, reserved) costs nothing. Cached prompt tokens cost `input`: no provider here prices them apart. */
export function spendOf(tokens: ProviderTally["tokens"], price: Price | null): number {
  if (price === null) return 0;
  return tokens.prompt * price.input + tokens.completion * price.output;
}

/** What the router said about the row, from /metrics (before/after deltas); RouteWise rows only. */
export interface RouterCounters {
  spend: number;
  hedgesFired: number;
}

/** Sums of one model's RouteWise counters in a /metrics text. */
export function routerCounters(metricsText: string, model: string): RouterCounters {
  let spend = 0;
  let hedgesFired = 0;
  for (const s of parsePrometheusText(metricsText)) {
    if (s.labels.model !== model) continue;
    if (s.name === "switchyard_routewise_spend_total") spend += s.value;
    if (s.name === "switchyard_routewise_hedges_total" && s.labels.event === "fired") hedgesFired += s.value;
  }
  return { spend, hedgesFired };
}

export interface RowResult {
  requests: number;
  ok: number;
  errors: number;
  errorKinds: Record<string, number>;
  latencyP50: number;
  latencyP99: number;
  ttftP50: number;
  ttftP99: number;
  rps: number;
  /** First request sent to last answer finished. */
  elapsedMs: number;
  /** Provider spend of the row, every provider summed. */
  spend: number;
  /** Spend per 1,000 requests sent. */
  spendPer1k: number;
  /** Successful answers per route, by the router's header. */
  answeredBy: Record<string, number>;
  /** Hedges the clients saw (x-switchyard-hedge: fired). */
  hedges: number;
  quota429: number;
  concurrency429: number;
  /** Requests a provider admitted whose client left before the end: hedge losers. */
  aborted: number;
  /** Tokens the quota provider billed in the row. */
  quotaTokensUsed: number;
  /** Router counters for the row, when it has them. */
  router: RouterCounters | null;
}

const sortedOf = (xs: number[]) => Float64Array.from(xs).sort();

export function summariseRow(run: Run, tallies: readonly ProviderTally[], specs: readonly ProviderSpec[], router: RouterCounters | null): RowResult {
  const okOnes = run.outcomes.filter((o): o is Extract<Outcome, { ok: true }> => o.ok);
  const errorKinds: Record<string, number> = {};
  for (const o of run.outcomes) if (!o.ok) errorKinds[o.error] = (errorKinds[o.error] ?? 0) + 1;
  const answeredBy: Record<string, number> = {};
  for (const o of okOnes) answeredBy[o.route] = (answeredBy[o.route] ?? 0) + 1;
  const latency = sortedOf(okOnes.map((o) => o.totalMs));
  const ttft = sortedOf(okOnes.map((o) => o.ttftMs));
  const priceOf = new Map(specs.map((s) => [s.id as string, s.price]));
  const spend = tallies.reduce((sum, t) => sum + spendOf(t.tokens, priceOf.get(t.id) ?? null), 0);
  const quota = tallies.find((t) => specs.find((s) => s.id === t.id)?.type === "quota");
  const sum = (f: (t: ProviderTally) => number) => tallies.reduce((n, t) => n + f(t), 0);
  return {
    requests: run.outcomes.length,
    ok: okOnes.length,
    errors: run.outcomes.length - okOnes.length,
    errorKinds,
    latencyP50: percentile(latency, 50),
    latencyP99: percentile(latency, 99),
    ttftP50: percentile(ttft, 50),
    ttftP99: percentile(ttft, 99),
    rps: run.elapsedMs > 0 ? okOnes.length / (run.elapsedMs / 1000) : 0,
    elapsedMs: run.elapsedMs,
    spend,
    spendPer1k: run.outcomes.length > 0 ? (spend / run.outcomes.length) * 1000 : Number.NaN,
    answeredBy,
    hedges: run.outcomes.filter((o) => o.hedged).length,
    quota429: sum((t) => t.quotaRejected),
    concurrency429: sum((t) => t.concurrencyRejected),
    aborted: sum((t) => t.aborted),
    quotaTokensUsed: quota ? quota.tokens.prompt + quota.tokens.completion : 0,
    router,
  };
}
