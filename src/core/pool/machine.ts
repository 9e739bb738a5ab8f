import { CounterSet } from "../../lib/counters";
import type { CircuitState } from "../health/circuit";
import { admit, durablyDifferent, healthObserved, newCircuit, releaseProbe } from "../health/circuit";
import type { ReplicaMetrics } from "../picking/vllm-metrics";
import { AppliedLedger } from "../state/applied-ledger";
import type { ReplicaTransition } from "./choose";
import { applyOutcomes } from "./choose";
import { IsolateLedger } from "./isolate-ledger";
import { PrefixLog } from "./prefix-log";
import type { KeptMetrics } from "./replica-checks";
import { FIRST_ALARM_DELAY_MS, foldScrape, nextPeriodMs } from "./replica-checks";
import { Naming } from "../state/untold";
import type { PoolNews, PoolSnapshot, PoolSpec, PoolSyncRequest, PoolView, ProbeRequest, ProbeResult } from "./wire";

const MAX_DURATION_SUM_MS = 3_600_000_000; // one batch's Σ of request durations: 1,000 requests of an hour each; past it the report is broken and is left out

export const ISOLATE_REPORT_TTL_MS = 10_000; // an isolate silent this long no longer counts (5 missed heartbeats)
const LEDGER_SWEEP_MS = 1_000; // expired isolates and probes are looked for at most once a second

/** A replica's last active health check. */
export interface HealthResult {
  healthy: boolean;
  checkedAt: number;
}

/** What the pool's alarm needs after a call: deleted, or set (`replace` false: only if none is pending). */
export type AlarmChange = "delete" | { at: number; replace: boolean };

/** What one call changed that storage must keep: the object writes it in one transaction. */
export interface PoolWrites {
  /** The adopted spec as stored, without the replicas' api keys; null: unchanged. */
  spec: PoolSpec | null;
  /** Replicas that left the pool: their circuit and health rows go (before the rows below are written). */
  removed: string[];
  /** Circuit rows whose phase or timers changed. */
  circuits: Map<string, CircuitState>;
  health: Map<string, HealthResult>;
  /** Isolates the applied ledger forgot: their rows go. */
  forgotten: string[];
  /** The isolate whose applied seq goes in the same transaction: set only when one of its batches wrote a circuit row. */
  applied: string | null;
  /** Circuit transitions, for the log (already counted). */
  transitions: ReplicaTransition[];
  alarm: AlarmChange | null;
}

const noWrites = (): PoolWrites => ({ spec: null, removed: [], circuits: new Map(), health: new Map(), forgotten: [], applied: null, transitions: [], alarm: null });

/** What this alarm should do, with the spec it does it for. */
export interface ChecksDue {
  spec: PoolSpec;
  health: boolean;
  scrape: boolean;
  /** When to wake again, from now; null: never (both checks off). */
  nextInMs: number | null;
}

/**
 * One pool's shared state as a pure machine: its spec, the replicas' circuits, their
 * health and metrics, the in-flight each isolate reports, the half-open probes handed
 * out, the counters, the prefix log, and which batches of each isolate were applied.
 * Time comes in as an argument and probe tokens from `newToken`; the health checks and
 * scrapes are fetched by the object and their answers handed in. What must be stored
 * comes out as `PoolWrites` for the object's storage adapter
 * (src/platform/objects/pool-state.ts).
 */
export class PoolMachine {
  readonly ledger = new AppliedLedger();
  #spec: PoolSpec | null = null;
  /** False while the spec is the one read back from storage, whose replicas' api keys were never stored. */
  #credentialsKnown = false;
  /** When a config (the cron, a publish) or an isolate last named this pool; checks stop SPEC_UNTOLD_MS after. */
  readonly #naming = new Naming();
  #circuits = new Map<string, CircuitState>();
  #health = new Map<string, HealthResult>();
  #nextHealthAt = 0;
  #metrics = new Map<string, KeptMetrics>();
  #inflight = new IsolateLedger(ISOLATE_REPORT_TTL_MS, LEDGER_SWEEP_MS);
  #probes = new Map<string, { replica: string; expiresAt: number }>();
  #nextProbeSweep = 0;
  #counters = new CounterSet();
  #prefixLog = new PrefixLog();

  constructor(private readonly newToken: () => string) {}

  /**
   * The stored spec (the object starting, at `now`); its replicas have no api keys until
   * the next adoption of its version. Counted as told now: a restarted object checks on
   * (without keys) until SPEC_UNTOLD_MS says its pool is gone.
   */
  restoreSpec(spec: PoolSpec, now: number): void {
    this.#spec = spec;
    this.#credentialsKnown = false;
    this.#naming.told(now);
  }

  /** A stored circuit row (the object starting). */
  restoreCircuit(replica: string, state: CircuitState): void {
    this.#circuits.set(replica, state);
  }

  /** A stored health row (the object starting). */
  restoreHealth(replica: string, health: HealthResult): void {
    this.#health.set(replica, health);
  }

  get spec(): PoolSpec | null {
    return this.#spec;
  }

  /** An isolate's report (load, outcomes, counters) in, each batch applied once; the pool's state, as that isolate needs it, out. */
  sync(request: PoolSyncRequest, now: number): { view: PoolView; writes: PoolWrites } {
    const writes = noWrites();
    if (request.spec) this.#adopt(request.spec, now, writes);
    else this.#told(now, writes); // an isolate routing to the pool: some live config names it
    this.#sweepProbes(now, writes);
    this.#inflight.report(request.isolate, request.seq, request.inflight, now);
    writes.forgotten = this.ledger.sweep(now);
    let stored = false;
    for (const batch of this.ledger.accept(request.isolate, request.batches, now)) stored = this.#apply(request.isolate, batch, writes) || stored;
    if (stored) writes.applied = request.isolate;
    return { view: this.#view(request.isolate, request.prefixCursor, now), writes };
  }

  /** A config's spec for this pool, told without a request. */
  adopt(spec: PoolSpec, now: number): PoolWrites {
    const writes = noWrites();
    this.#adopt(spec, now, writes);
    return writes;
  }

  /** Admits a half-open probe if the pool has a slot: one decision for every isolate. */
  admitProbe(request: ProbeRequest, now: number): { result: ProbeResult; writes: PoolWrites } {
    const writes = noWrites();
    this.#adopt(request.spec, now, writes);
    this.#sweepProbes(now, writes);
    const spec = this.#spec!;
    const admission = admit(this.#circuits.get(request.replica) ?? newCircuit(), now, spec.circuit);
    this.#keep(new Map([[request.replica, admission.state]]), admission.transition ? [{ replica: request.replica, transition: admission.transition }] : [], writes);
    let token: string | null = null;
    if (admission.admission === "probe") {
      token = this.newToken();
      this.#probes.set(token, { replica: request.replica, expiresAt: now + request.ttlMs });
    }
    return { result: { admission: admission.admission, token, circuit: admission.state }, writes };
  }

  snapshot(now: number): { snapshot: PoolSnapshot; writes: PoolWrites } {
    const writes = noWrites();
    this.#inflight.sweep(now);
    this.#sweepProbes(now, writes);
    const replicas = (this.#spec?.replicas ?? []).map((r) => {
      const circuit = this.#circuits.get(r.id) ?? newCircuit();
      const health = this.#health.get(r.id);
      return {
        id: r.id,
        circuit: circuit.phase,
        reopenAt: circuit.reopenAt,
        inflight: this.#inflight.inflight(r.id),
        healthy: health?.healthy ?? null,
        checkedAt: health?.checkedAt ?? null,
        metrics: this.#metrics.get(r.id)?.sample ?? null,
        scrapeFailures: this.#metrics.get(r.id)?.failures ?? 0,
        scrapeError: this.#metrics.get(r.id)?.error ?? null,
        scrapedAt: this.#metrics.get(r.id)?.scrapedAt ?? null,
      };
    });
    const snapshot: PoolSnapshot = {
      pool: this.#spec?.pool ?? "",
      version: this.#spec?.version ?? null,
      replicas,
      isolates: this.#inflight.liveIsolates,
      requests: this.#counters.samples("requests"),
      attempts: this.#counters.samples("attempts"),
      fallbacks: this.#counters.samples("fallbacks"),
      durationMs: this.#counters.samples("duration_ms"),
      transitions: this.#counters.samples("transitions"),
    };
    return { snapshot, writes };
  }

  /**
   * The alarm went off: health checks every `health_check` seconds, and the replicas'
   * metrics every `metrics.scrape_ms`. One alarm serves both, set to the nearer; without
   * scraping every alarm is a health check, as the interval set it. Null: no spec yet.
   */
  checksDue(now: number): ChecksDue | null {
    const stored = this.#spec;
    if (!stored) return null;
    if (!this.#naming.named(now)) {
      // No config names this pool any more: stop calling its replicas, and forget their keys.
      this.#spec = withoutCredentials(stored);
      this.#credentialsKnown = false;
      return null;
    }
    // Read back from storage: a URL stored as written (`${VAR}` unresolved) waits for the next adoption to bring the real one.
    const spec = this.#credentialsKnown ? stored : { ...stored, replicas: stored.replicas.filter((r) => r.urlAtRest === undefined) };
    const health = spec.healthCheckS > 0 && (spec.metrics.scrapeMs === 0 || now >= this.#nextHealthAt);
    if (health) this.#nextHealthAt = now + spec.healthCheckS * 1000;
    return { spec, health, scrape: spec.metrics.scrapeMs > 0, nextInMs: nextPeriodMs(spec) };
  }

  /** Health checks' answers, under the spec they were made for: each feeds its replica's circuit. */
  healthChecked(spec: PoolSpec, results: readonly { id: string; healthy: boolean }[], now: number): PoolWrites {
    const writes = noWrites();
    const changed = new Map<string, CircuitState>();
    const transitions: ReplicaTransition[] = [];
    for (const { id, healthy } of results) {
      const health = { healthy, checkedAt: now };
      this.#health.set(id, health);
      writes.health.set(id, health);
      const observed = healthObserved(this.#circuits.get(id) ?? newCircuit(), healthy, now, spec.circuit);
      changed.set(id, observed.state);
      if (observed.transition) transitions.push({ replica: id, transition: observed.transition });
    }
    this.#keep(changed, transitions, writes);
    return writes;
  }

  /**
   * Scrapes' answers (null: failed), under the spec they were made for; kept in memory
   * only. Failing scrapes never touch a circuit: a replica whose /metrics is down may
   * still serve, and is then routed on load alone.
   */
  scraped(spec: PoolSpec, samples: readonly (readonly [string, ReplicaMetrics | null, string?])[]): void {
    // A scrape that outlived a config change may answer for a replica the pool no longer has.
    const current = new Set(this.#spec?.replicas.map((r) => r.id));
    for (const [id, sample, error] of samples) if (current.has(id)) this.#metrics.set(id, foldScrape(this.#metrics.get(id), sample, spec.metrics.failureThreshold, error));
  }

  #view(isolate: string, prefixCursor: number, now: number): PoolView {
    return {
      version: this.#spec?.version ?? null,
      at: now,
      acked: this.ledger.applied(isolate),
      prefix: this.#prefixLog.since(prefixCursor, isolate),
      replicas: (this.#spec?.replicas ?? []).map((r) => ({
        id: r.id,
        circuit: this.#circuits.get(r.id) ?? newCircuit(),
        others: this.#inflight.inflight(r.id, isolate),
        healthy: this.#health.get(r.id)?.healthy ?? null,
        metrics: this.#metrics.get(r.id)?.sample ?? null,
      })),
    };
  }

  /** Applies one batch; true when it wrote a circuit row (a durable effect). */
  #apply(isolate: string, batch: PoolNews, writes: PoolWrites): boolean {
    this.#prefixLog.append(isolate, batch.prefix ?? []);
    const spec = this.#spec;
    let stored = false;
    if (spec) {
      // A probe's token releases its slot once; a token already swept counts as a plain outcome.
      const { changed, transitions } = applyOutcomes(this.#circuits, batch.outcomes, spec, (o) => o.probe !== null && this.#probes.delete(o.probe));
      stored = this.#keep(changed, transitions, writes) > 0;
    }
    for (const s of batch.requests) this.#counters.add("requests", s.labels, s.value);
    for (const s of batch.attempts) this.#counters.add("attempts", s.labels, s.value);
    for (const s of batch.fallbacks) this.#counters.add("fallbacks", s.labels, s.value);
    for (const s of batch.durationMs ?? []) if (Number.isFinite(s.value) && s.value >= 0 && s.value <= MAX_DURATION_SUM_MS) this.#counters.add("duration_ms", s.labels, s.value);
    return stored;
  }

  /** Someone named this pool: its checks go on, or start again if they had stopped. */
  #told(now: number, writes: PoolWrites): void {
    if (!this.#naming.told(now) || !this.#spec) return;
    const period = nextPeriodMs(this.#spec);
    if (period !== null) writes.alarm = { at: now + Math.min(period, FIRST_ALARM_DELAY_MS), replace: true };
  }

  #adopt(spec: PoolSpec, now: number, writes: PoolWrites): void {
    this.#told(now, writes);
    const previous = this.#spec;
    // Version ids sort by publish time. While a rollout converges, isolates on the older
    // version still route with their own spec, but only a newer one is stored. A spec read
    // back from storage has no credentials: the same version, told again, brings them.
    if (previous && previous.pool === spec.pool && (spec.version < previous.version || (spec.version === previous.version && this.#credentialsKnown))) return;
    this.#spec = spec;
    this.#credentialsKnown = true;
    if (previous?.version === spec.version) return; // credentials only: nothing else changed
    writes.spec = withoutCredentials(spec);
    const ids = new Set(spec.replicas.map((r) => r.id));
    for (const replica of [...this.#circuits.keys()]) {
      if (ids.has(replica)) continue;
      this.#circuits.delete(replica);
      this.#health.delete(replica);
      this.#metrics.delete(replica);
      this.#prefixLog.dropReplica(replica);
      writes.removed.push(replica);
    }
    const period = nextPeriodMs(spec);
    const changedTimers = previous?.healthCheckS !== spec.healthCheckS || previous?.metrics.scrapeMs !== spec.metrics.scrapeMs;
    writes.alarm = period === null ? "delete" : { at: now + Math.min(period, FIRST_ALARM_DELAY_MS), replace: changedTimers };
  }

  /** A probe whose verdict never came back must not hold the half-open slot forever. */
  #sweepProbes(now: number, writes: PoolWrites): void {
    if (now < this.#nextProbeSweep) return;
    this.#nextProbeSweep = now + LEDGER_SWEEP_MS;
    const changed = new Map<string, CircuitState>();
    for (const [token, probe] of this.#probes) {
      if (probe.expiresAt > now) continue;
      this.#probes.delete(token);
      const circuit = changed.get(probe.replica) ?? this.#circuits.get(probe.replica);
      if (circuit) changed.set(probe.replica, releaseProbe(circuit));
    }
    this.#keep(changed, [], writes);
  }

  /** Keeps changed circuits and counts the transitions; returns how many circuit rows it wrote. */
  #keep(changed: Map<string, CircuitState>, transitions: ReplicaTransition[], writes: PoolWrites): number {
    let written = 0;
    for (const [replica, state] of changed) {
      const before = this.#circuits.get(replica);
      this.#circuits.set(replica, state);
      if (before && !durablyDifferent(before, state)) continue;
      writes.circuits.set(replica, state);
      written++;
    }
    for (const { replica, transition } of transitions) {
      this.#counters.add("transitions", { replica, from: transition.from, to: transition.to });
      writes.transitions.push({ replica, transition });
    }
    return written;
  }
}

/** A spec as stored: every replica's credential left out. */
/** The spec as stored: no api keys, and each URL that holds an env value as written. */
function withoutCredentials(spec: PoolSpec): PoolSpec {
  return { ...spec, replicas: spec.replicas.map(({ apiKey: _apiKey, ...replica }) => ({ ...replica, url: replica.urlAtRest ?? replica.url })) };
}
