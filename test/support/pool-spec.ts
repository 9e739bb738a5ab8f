/** A pool's spec as an isolate's agent gets it, for agent unit tests: switchyard, defaults everywhere, replicas by id. */
import type { PoolSpec } from "../../src/core/pool/wire";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { DEFAULT_CIRCUIT_POLICY } from "../../src/core/health/circuit";

export function poolSpec(ids: readonly string[], over: Partial<PoolSpec> = {}): PoolSpec {
  return {
    pool: "p",
    version: "v1",
    policy: "switchyard",
    scoring: DEFAULT_SETTINGS,
    indexCapacityBlocks: 100_000,
    locality: [],
    maxOngoing: 0,
    queue: { maxWaiting: 0, ttlMs: 2000 },
    failOpen: false,
    circuit: DEFAULT_CIRCUIT_POLICY,
    healthCheckS: 0,
    healthPath: "/health",
    metrics: { scrapeMs: 0, path: "/metrics", timeoutMs: 1000, staleMs: 5000, failureThreshold: 3 },
    replicas: ids.map((id) => ({ id, url: `http://${id}`, weight: 1, labels: {} })),
    ...over,
  };
}
