/**
 * What the app layer needs of the Worker's env: the Durable Object namespaces (a stub by
 * name; ./stubs.ts types each by the RPC surface the state clients call) and two
 * switches. The platform's `Env` (src/platform/env.ts) satisfies it; nothing here knows
 * the object classes.
 */
export interface ObjectNamespace {
  getByName(name: string): unknown;
}

export interface StateBindings {
  POOL_STATE: ObjectNamespace;
  AFFINITY: ObjectNamespace;
  BANDIT: ObjectNamespace;
  ROUTE_ENVELOPE: ObjectNamespace;
  PROVIDER_QUOTA: ObjectNamespace;
  CONCURRENCY_SLOTS: ObjectNamespace;
  PRINCIPAL_LIMITS: ObjectNamespace;
  GRAPH_COUNTERS: ObjectNamespace;
  /** "0" turns session affinity off everywhere (seed 004's kill switch). */
  ROUTING_AFFINITY_ENABLED?: string;
  /** Bench only (`--do-rtt-ms`): milliseconds added to every Durable Object call (./stubs.ts). */
  SWITCHYARD_SIMULATED_DO_RTT_MS?: string;
}
