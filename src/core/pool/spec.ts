import type { Config } from "../config/schema";
import type { UrlAtRest } from "../config/redact";
import { tenantShare } from "./wait-queue";
import { poolScoringSettings } from "../config/scoring-schema";
import { DEFAULT_SCRAPE_MS } from "../config/schema";
import { readsEngineMetrics } from "../picking/reads-metrics";
import type { PoolSpec } from "./wire";

/**
 * What each pool's Durable Object is told about its pool; built once per config version.
 * `atRest` gives a URL as it may be stored (the config's redactions; ../config/redact.ts).
 */
export function buildPoolSpecs(config: Config, version: string, atRest: UrlAtRest = () => undefined): Map<string, PoolSpec> {
  const specs = new Map<string, PoolSpec>();
  for (const [pool, settings] of Object.entries(config.pools)) {
    specs.set(pool, {
      pool,
      version,
      policy: settings.policy,
      scoring: poolScoringSettings(settings.scoring, settings.metrics.stale_ms),
      indexCapacityBlocks: settings.scoring.index_capacity_blocks ?? null,
      locality: settings.locality,
      maxOngoing: settings.max_ongoing_requests,
      criticalShare: settings.critical_share,
      queue: {
        maxWaiting: settings.queue.max_waiting,
        maxPerTenant: tenantShare(settings.queue.max_waiting, settings.queue.max_waiting_per_tenant),
        ttlMs: settings.queue.ttl_ms,
      },
      failOpen: settings.fail_open,
      circuit: settings.circuit,
      healthCheckS: settings.health_check,
      healthPath: settings.health_path,
      metrics: {
        scrapeMs: settings.metrics.scrape_ms ?? (readsEngineMetrics(settings.policy) ? DEFAULT_SCRAPE_MS : 0),
        path: settings.metrics.path,
        timeoutMs: settings.metrics.timeout_ms,
        staleMs: settings.metrics.stale_ms,
        failureThreshold: settings.metrics.failure_threshold,
      },
      replicas: settings.replicas.map((r) => {
        const urlAtRest = atRest(r.url);
        return { id: r.id, url: r.url, ...(urlAtRest !== undefined && { urlAtRest }), weight: r.weight, labels: keyedLabels(r.labels), ...(r.api_key && { apiKey: r.api_key }), ...(r.dialect === "anthropic" && { dialect: "anthropic" as const }) };
      }),
    });
  }
  return specs;
}

/** `colo=AMS`-style labels as a map; labels without `=` are names only (seed 004's `local`). */
export function keyedLabels(labels: readonly string[]): Record<string, string> {
  const keyed: Record<string, string> = {};
  for (const label of labels) {
    const at = label.indexOf("=");
    if (at > 0) keyed[label.slice(0, at).trim()] = label.slice(at + 1).trim();
  }
  return keyed;
}
