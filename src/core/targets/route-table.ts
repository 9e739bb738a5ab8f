import type { Config, Priority, Replica } from "../config/schema";
import type { CacheTarget } from "../picking/prefix/adapter";
import { sharesEvenly } from "../picking/policies";

/** A replica as the picker sees it, with its share of the pool's traffic (0..1). */
export interface RouteReplica extends Replica {
  pool: string;
  share: number;
}

/** A pool's replicas, derived once per config version. */
export interface PoolRoute {
  pool: string;
  /** Every replica of the pool, in config order, weight-0 ones included (for display). */
  replicas: RouteReplica[];
  /** Replicas that may receive traffic: weight > 0. */
  candidates: RouteReplica[];
}

export interface ModelRoute extends PoolRoute {
  /** The name requests are counted and pinned under: the model, or `graph:<name>` for graph steps. */
  model: string;
  upstreamModel: string | undefined;
  /** Load-shedding class of the model's requests. */
  priority: Priority;
  /** The KV cache the model's prompts land in: base model and LoRA adapter (null: the base model itself). */
  cacheTarget: CacheTarget;
}

/** Each pool's replicas with their shares; models on one pool share these objects. */
export function buildPoolRoutes(config: Config): Map<string, PoolRoute> {
  const pools = new Map<string, PoolRoute>();
  for (const [pool, settings] of Object.entries(config.pools)) {
    const total = settings.replicas.reduce((sum, r) => sum + r.weight, 0);
    const eligible = settings.replicas.filter((r) => r.weight > 0).length;
    const even = sharesEvenly(settings.policy);
    const share = (weight: number) => (weight <= 0 ? 0 : even ? 1 / eligible : weight / total);
    const replicas = settings.replicas.map((r) => ({ ...r, pool, share: share(r.weight) }));
    pools.set(pool, { pool, replicas, candidates: replicas.filter((r) => r.weight > 0) });
  }
  return pools;
}

/** Derived once per config version, so the hot path only does map lookups. */
export function buildRouteTable(config: Config, pools: Map<string, PoolRoute> = buildPoolRoutes(config)): Map<string, ModelRoute> {
  const table = new Map<string, ModelRoute>();
  for (const [model, target] of Object.entries(config.models)) {
    if (target.pool === undefined) continue; // graph targets are routed by the graph executor
    const pool = pools.get(target.pool);
    if (!pool) continue; // the schema refuses this; kept total for the type checker
    const served = target.upstream_model ?? model;
    const cacheTarget = target.lora ? { base: target.lora.base, adapter: target.lora.adapter ?? served } : { base: served, adapter: null };
    table.set(model, { ...pool, model, upstreamModel: target.upstream_model, priority: target.priority ?? "standard", cacheTarget });
  }
  return table;
}
