import type { StateBindings } from "../app/state/bindings";
import type { PoolState } from "./objects/pool-state";
import type { AffinityShard } from "./objects/affinity-shard";
import type { BanditState } from "./objects/bandit-state";
import type { RouteEnvelope } from "./objects/route-envelope";
import type { ProviderQuota } from "./objects/provider-quota";
import type { ConcurrencySlots } from "./objects/concurrency-slots";
import type { PrincipalLimits } from "./objects/principal-limits";
import type { GraphCounters } from "./objects/graph-counters";

/** Bindings and vars the Worker reads. Secrets referenced by `${VAR}` in config are extra string keys. */
export interface Env extends StateBindings {
  CONFIG: KVNamespace;
  POOL_STATE: DurableObjectNamespace<PoolState>;
  AFFINITY: DurableObjectNamespace<AffinityShard>;
  BANDIT: DurableObjectNamespace<BanditState>;
  ROUTE_ENVELOPE: DurableObjectNamespace<RouteEnvelope>;
  PROVIDER_QUOTA: DurableObjectNamespace<ProviderQuota>;
  CONCURRENCY_SLOTS: DurableObjectNamespace<ConcurrencySlots>;
  PRINCIPAL_LIMITS: DurableObjectNamespace<PrincipalLimits>;
  GRAPH_COUNTERS: DurableObjectNamespace<GraphCounters>;
  /** Isolate config cache lifetime, ms, as a string var (wrangler vars are strings). */
  CONFIG_REFRESH_MS?: string;
  /** Secret guarding admin endpoints; admin endpoints answer 404 while it is unset. */
  ADMIN_TOKEN?: string;
  [secret: string]: unknown;
}
