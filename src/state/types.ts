/**
 * Plain data that crosses the Worker ↔ Durable Object boundary (structured-clonable,
 * small). The Worker sends the pool's spec with every call so an object never needs to
 * read config itself; it re-syncs only when the version changes.
 */
import type { CircuitPhase, CircuitPolicy } from "../routing/circuit";
import type { PolicyName } from "../routing/policies";

export interface PoolSpec {
  pool: string;
  /** Config version the spec came from. */
  version: string;
  policy: PolicyName;
  failOpen: boolean;
  circuit: CircuitPolicy;
  /** Seconds between active health checks, 0 = off. */
  healthCheckS: number;
  healthPath: string;
  replicas: { id: string; url: string; weight: number }[];
}

export interface AcquireRequest {
  spec: PoolSpec;
  /** Replica the caller's pin names; it goes first if its circuit admits it. */
  pinned: string | null;
  /** Admin override (X-Route-Pin): this replica only, circuits and affinity bypassed. */
  forced: string | null;
  leaseTtlMs: number;
}

export interface AcquireResult {
  /** Replica ids in the order to try them; empty = nothing can take traffic. */
  order: string[];
  /** Lease on order[0]; release it with `finish`. */
  leaseId: string | null;
  /** order[0] was admitted as a half-open probe. */
  probe: boolean;
  /** Whether the pinned replica was allowed (null when nothing was pinned). */
  pinnedAllowed: boolean | null;
  /** Every circuit was open and the pool is fail-open: circuits were ignored. */
  failedOpen: boolean;
}

/** How one attempt went, as far as the replica's health is concerned. */
export type Verdict = "success" | "failure" | "neutral";

export interface AttemptReport {
  replica: string;
  verdict: Verdict;
  /** Upstream status, when one was received. */
  status: number | null;
}

export interface FinishReport {
  leaseId: string | null;
  model: string;
  attempts: AttemptReport[];
  /** Status the client received. */
  status: number;
  /** The first attempt was a half-open probe. */
  probe: boolean;
}

export interface ShardRouteRequest {
  key: string;
  model: string;
  pool: string;
  ttlMs: number;
  acquire: AcquireRequest;
}

export type AffinityEvent = "hit" | "miss" | "created" | "expired" | "dropped_error" | "dropped_unavailable";

export interface ShardRouteResult extends AcquireResult {
  /** Replica pinned for (key, model) after this call, or null. */
  pinned: string | null;
}

export interface ShardFinishReport {
  key: string;
  model: string;
  pool: string;
  /** The pinned replica failed this request: drop the pin. */
  dropPinOf: string | null;
  finish: FinishReport;
}

export interface ReplicaState {
  id: string;
  circuit: CircuitPhase;
  /** When an open circuit may admit a probe (epoch ms), or null. */
  reopenAt: number | null;
  inflight: number;
  /** Last active health check: true/false, or null when never checked. */
  healthy: boolean | null;
  checkedAt: number | null;
}

export interface CounterSample {
  labels: Record<string, string>;
  value: number;
}

export interface PoolSnapshot {
  pool: string;
  version: string | null;
  replicas: ReplicaState[];
  requests: CounterSample[]; // {model, replica, status}
  attempts: CounterSample[]; // {replica, verdict}
  fallbacks: CounterSample[]; // {model}
  transitions: CounterSample[]; // {replica, from, to}
}

export interface ShardSnapshot {
  events: CounterSample[]; // {event, model}
  pins: number;
}
