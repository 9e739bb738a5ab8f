import type { ReplicaMetrics } from "../picking/vllm-metrics";
import { withTpot } from "../picking/vllm-metrics";
import type { PoolSpec } from "./wire";

/**
 * The pool object's own timer, as rules: when its alarm checks health and scrapes
 * metrics, and what a scrape's answer does to the sample kept for a replica. The fetches
 * themselves are the object's (src/platform/objects/replica-probes.ts).
 */

export const FIRST_ALARM_DELAY_MS = 1_000; // check and scrape soon after a pool appears, not a whole interval later

/** The alarm's period: the nearer of the health-check and scrape intervals, or null when both are off. */
export function nextPeriodMs(spec: PoolSpec): number | null {
  const periods = [spec.healthCheckS * 1000, spec.metrics.scrapeMs].filter((ms) => ms > 0);
  return periods.length === 0 ? null : Math.min(...periods);
}

/**
 * How long one replica's scrape may take: `metrics.timeout_ms`, cut to one interval. Each
 * replica is scraped on its own and never twice at once, so a replica that hangs is
 * asked again at most once an interval and holds up no other replica's scrape.
 */
export function scrapeTimeoutMs(spec: PoolSpec): number {
  return Math.min(spec.metrics.timeoutMs, spec.metrics.scrapeMs);
}

/** One scrape's answer: the replica's numbers, or why there are none (src/platform/objects/replica-probes.ts). */
export type ScrapeAnswer = { metrics: ReplicaMetrics } | { error: string };

/** A replica's last good metrics sample, the scrapes that failed since, why the last one failed, and when one last succeeded. */
export interface KeptMetrics {
  sample: ReplicaMetrics | null;
  failures: number;
  error: string | null;
  /** When the last good scrape was read (its sample's sampledAt), kept after the sample is dropped; null: never. */
  scrapedAt: number | null;
}

/**
 * One scrape's answer (null: it failed, `error` says why) folded into what is kept. A
 * failed scrape keeps the last good sample, which ages (isolates stop routing on it once
 * it is older than stale_ms); after `failureThreshold` failures in a row it is dropped.
 */
export function foldScrape(before: KeptMetrics | undefined, sample: ReplicaMetrics | null, failureThreshold: number, error: string | null = null): KeptMetrics {
  if (sample) return { sample: withTpot(sample, before?.sample ?? null), failures: 0, error: null, scrapedAt: sample.sampledAt };
  const failures = (before?.failures ?? 0) + 1;
  return { sample: failures >= failureThreshold ? null : (before?.sample ?? null), failures, error: error ?? "scrape failed", scrapedAt: before?.scrapedAt ?? null };
}
