import type { Config, Replica } from "../config/schema";

/** A replica as the picker sees it, with its share of the model's traffic (0..1). */
export interface RouteReplica extends Replica {
  pool: string;
  share: number;
}

export interface ModelRoute {
  model: string;
  pool: string;
  upstreamModel: string | undefined;
  /** Every replica of the pool, in config order, weight-0 ones included (for display). */
  replicas: RouteReplica[];
  /** Replicas that may receive traffic: weight > 0. */
  candidates: RouteReplica[];
}

/** Derived once per config version, so the hot path only does map lookups. */
export function buildRouteTable(config: Config): Map<string, ModelRoute> {
  const table = new Map<string, ModelRoute>();
  for (const [model, target] of Object.entries(config.models)) {
    const poolName = target.pool;
    if (poolName === undefined) continue; // graph targets are routed by the graph executor
    const pool = config.pools[poolName];
    if (!pool) continue; // the schema refuses this; kept total for the type checker
    const total = pool.replicas.reduce((sum, r) => sum + r.weight, 0);
    const replicas = pool.replicas.map((r) => ({ ...r, pool: poolName, share: total > 0 ? r.weight / total : 0 }));
    table.set(model, {
      model,
      pool: poolName,
      upstreamModel: target.upstream_model,
      replicas,
      candidates: replicas.filter((r) => r.weight > 0),
    });
  }
  return table;
}
