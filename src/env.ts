import type { PoolState } from "../durable-objects/pool-state";
import type { AffinityShard } from "../durable-objects/affinity-shard";
import type { BanditState } from "../durable-objects/bandit-state";
import type { RouteEnvelope } from "../durable-objects/route-envelope";
import type { ProviderQuota } from "../durable-objects/provider-quota";
import type { ConcurrencySlots } from "../durable-objects/concurrency-slots";

/** Bindings and vars the Worker reads. Secrets referenced by `${VAR}` in config are extra string keys. */
export interface Env {
  CONFIG: KVNamespace;
  POOL_STATE: DurableObjectNamespace<PoolState>;
  AFFINITY: DurableObjectNamespace<AffinityShard>;
  BANDIT: DurableObjectNamespace<BanditState>;
  ROUTE_ENVELOPE: DurableObjectNamespace<RouteEnvelope>;
  PROVIDER_QUOTA: DurableObjectNamespace<ProviderQuota>;
  CONCURRENCY_SLOTS: DurableObjectNamespace<ConcurrencySlots>;
  /** Isolate config cache lifetime, ms, as a string var (wrangler vars are strings). */
  CONFIG_REFRESH_MS?: string;
  /** "0" turns session affinity off everywhere (seed 004's kill switch). */
  ROUTING_AFFINITY_ENABLED?: string;
  /** Secret guarding admin endpoints; admin endpoints answer 404 while it is unset. */
  ADMIN_TOKEN?: string;
  /** Bench only (`--do-rtt-ms`): milliseconds added to every Durable Object call (src/state/stubs.ts). */
  SWITCHYARD_SIMULATED_DO_RTT_MS?: string;
  [secret: string]: unknown;
}
