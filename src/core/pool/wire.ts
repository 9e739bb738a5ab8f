/**
 * Plain data that crosses the Worker ↔ Durable Object boundary (structured-clonable,
 * small). Isolates route from their own view and talk to the objects in batches: see
 * "Shared state" in the README for the protocol and its staleness bounds.
 */
import type { CircuitPhase, CircuitPolicy, CircuitState } from "../health/circuit";
import type { PolicyName } from "../picking/policies";
import type { ReplicaMetrics } from "../picking/vllm-metrics";
import type { PrefixInsert } from "./prefix-log";
import type { ScoringSettings } from "../picking/scoring/settings";

export interface PoolSpec {
  pool: string;
  /** Config version the spec came from; versions sort by publish time. */
  version: string;
  /** The pool's policy: a profile of src/core/picking/policies.ts. */
  policy: PolicyName;
  /** Settings of the policies' plugins (scoring/settings.ts); read by isolates only. */
  scoring: ScoringSettings;
  /** Prefix-index capacity per replica, in blocks, in each isolate; null: each replica's engine's size (picking/prefix/index-sizing.ts). */
  indexCapacityBlocks: number | null;
  /** Label keys matched against the request's entry point (request.cf). */
  locality: string[];
  /** In-flight cap per replica across the router fleet; 0 = none. */
  maxOngoing: number;
  /** Share of the pool's slots critical requests may hold per isolate (with maxOngoing > 0); absent: the config's default. Read by isolates only. */
  criticalShare?: number;
  /** The fair queue of refused requests, per isolate; maxWaiting 0 = off; maxPerTenant absent: the config's default share. Read by isolates only. */
  queue: { maxWaiting: number; maxPerTenant?: number; ttlMs: number };
  failOpen: boolean;
  circuit: CircuitPolicy;
  /** Seconds between active health checks, 0 = off. */
  healthCheckS: number;
  healthPath: string;
  /** Scraping of the replicas' own metrics; scrapeMs 0 = off. */
  metrics: { scrapeMs: number; path: string; timeoutMs: number; staleMs: number; failureThreshold: number };
  /** `labels` are the config's `key=value` labels (locality), as a map. */
  /**
   * `apiKey` (the replica's `api_key`) is sent on health checks and metrics scrapes, as on
   * model calls (as `x-api-key` to an Anthropic-native replica, `dialect: anthropic`); the
   * pool's object keeps it in memory only, never in storage. `urlAtRest`
   * is the URL as written, with `${VAR}` unresolved, when the URL holds an env value: what
   * the object stores in its place.
   */
  replicas: { id: string; url: string; urlAtRest?: string; weight: number; labels: Record<string, string>; apiKey?: string; dialect?: "anthropic" }[];
}


/** One attempt's verdict, stamped with when it was seen, for the circuits. */
export interface OutcomeReport {
  replica: string;
  verdict: Verdict;
  /** Domain time of the outcome, epoch ms: circuits window and cooldowns count from it. */
  at: number;
  /** Token of the half-open probe this attempt was admitted as, or null. */
  probe: string | null;
}

import type { CounterSample } from "../../lib/counters";
import type { Acked, BatchedSync, Sealed } from "../state/batches";
import type { AttemptReport, Verdict } from "../upstream/verdict";
export type { AttemptReport, Verdict };
export type { CounterSample };

/** What an isolate saw since its last report. */
export interface PoolNews {
  outcomes: OutcomeReport[];
  /** Prompt blocks this isolate sent to replicas (its guesses of what they now cache). */
  prefix: PrefixInsert[];
  requests: CounterSample[]; // {model, replica, status}
  attempts: CounterSample[]; // {replica, verdict}
  fallbacks: CounterSample[]; // {model}
  /** Σ ms from each finished request's arrival to its end, by model; absent from isolates older than it. */
  durationMs?: CounterSample[]; // {model}
}

/** A pool batch as sent: applied by the object exactly once, by `seq`. */
export type PoolBatch = Sealed<PoolNews>;

/**
 * An isolate's periodic exchange with a pool's object: its load and news in, the pool's
 * state out. `isolate` is random per isolate; its in-flight report expires when it stops
 * reporting.
 */
export interface PoolSyncRequest extends BatchedSync<PoolNews> {
  /** Increases with every request this isolate sends to this pool; stale in-flight reports are ignored. */
  seq: number;
  /** Sent only when the object's version differs from the isolate's. */
  spec: PoolSpec | null;
  /** This isolate's requests in flight per replica, now (absolute, not a delta). */
  inflight: Record<string, number>;
  /** The newest prefix-log entry this isolate has (0: none); the answer brings the others' since then. */
  prefixCursor: number;
}

export interface ReplicaView {
  id: string;
  circuit: CircuitState;
  /** Requests in flight on this replica from every other live isolate. */
  others: number;
  healthy: boolean | null;
  /** The replica's own numbers from its last good scrape (sampledAt says how old), or null. */
  metrics: ReplicaMetrics | null;
}

/** A pool's shared state as one isolate needs it to route; `acked` is the highest batch seq of this isolate applied. */
export interface PoolView extends Acked {
  /** Spec version the object holds, or null before any. */
  version: string | null;
  /** Object's clock when the view was taken. */
  at: number;
  replicas: ReplicaView[];
  /** Other isolates' prefix inserts since the request's cursor, and the cursor to send next. */
  prefix: { cursor: number; inserts: PrefixInsert[] };
}

export interface ProbeRequest {
  spec: PoolSpec;
  replica: string;
  /** A probe slot not reported back by then is freed (the isolate may be gone). */
  ttlMs: number;
}

export interface ProbeResult {
  /** "probe": admitted as the half-open probe; "yes": the circuit closed meanwhile; "no": no slot. */
  admission: "probe" | "yes" | "no";
  /** Present with "probe": report it with the outcome so the slot is released exactly once. */
  token: string | null;
  circuit: CircuitState;
}

export interface ReplicaState {
  id: string;
  circuit: CircuitPhase;
  /** When an open circuit may admit a probe (epoch ms), or null. */
  reopenAt: number | null;
  /** Requests in flight, summed over every live isolate. */
  inflight: number;
  /** Last active health check: true/false, or null when never checked. */
  healthy: boolean | null;
  checkedAt: number | null;
  /** Last good metrics scrape, or null; how many scrapes have failed since, and why the last one failed (null: it did not). */
  metrics: ReplicaMetrics | null;
  scrapeFailures: number;
  scrapeError: string | null;
  /** When a scrape of the replica last succeeded (epoch ms), kept after its sample is dropped; null: never. */
  scrapedAt: number | null;
}

export interface PoolSnapshot {
  pool: string;
  version: string | null;
  replicas: ReplicaState[];
  /** Isolates whose in-flight report is live. */
  isolates: number;
  requests: CounterSample[]; // {model, replica, status}
  attempts: CounterSample[]; // {replica, verdict}
  fallbacks: CounterSample[]; // {model}
  durationMs: CounterSample[]; // {model}
  transitions: CounterSample[]; // {replica, from, to}
}
