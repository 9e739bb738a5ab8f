import type { Config } from "../config/schema";
import type { PoolSpec } from "./types";

/** What each pool's Durable Object is told about its pool; built once per config version. */
export function buildPoolSpecs(config: Config, version: string): Map<string, PoolSpec> {
  const specs = new Map<string, PoolSpec>();
  for (const [pool, settings] of Object.entries(config.pools)) {
    specs.set(pool, {
      pool,
      version,
      policy: settings.policy,
      failOpen: settings.fail_open,
      circuit: settings.circuit,
      healthCheckS: settings.health_check,
      healthPath: settings.health_path,
      metrics: {
        scrapeMs: settings.metrics.scrape_ms,
        path: settings.metrics.path,
        timeoutMs: settings.metrics.timeout_ms,
        staleMs: settings.metrics.stale_ms,
        failureThreshold: settings.metrics.failure_threshold,
      },
      replicas: settings.replicas.map((r) => ({ id: r.id, url: r.url, weight: r.weight })),
    });
  }
  return specs;
}
