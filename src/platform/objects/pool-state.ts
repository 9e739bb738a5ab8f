import { DurableObject } from "cloudflare:workers";
import type { CircuitState } from "../../core/health/circuit";
import { admit, durablyDifferent, healthObserved, newCircuit, releaseProbe } from "../../core/health/circuit";
import type { ReplicaTransition } from "../../core/pool/choose";
import { applyOutcomes } from "../../core/pool/choose";
import { IsolateLedger } from "../../core/pool/isolate-ledger";
import { AppliedLedger } from "../../core/state/applied-ledger";
import { createAppliedTable, loadApplied, saveApplied, sweepApplied } from "./applied-store";
import { PrefixLog } from "../../core/pool/prefix-log";
import type { PoolNews, PoolSnapshot, PoolSpec, PoolSyncRequest, PoolView, ProbeRequest, ProbeResult } from "../../core/pool/wire";
import type { ReplicaMetrics } from "../../core/picking/vllm-metrics";
import { withTpot } from "../../core/picking/vllm-metrics";
import { clock } from "./clock";
import { probeHealth, scrapeMetrics } from "./replica-probes";
import { upstreamUrl } from "../../core/upstream/url";
import { CounterSet } from "../../lib/counters";

export const ISOLATE_REPORT_TTL_MS = 10_000; // an isolate silent this long no longer counts (5 missed heartbeats)
const LEDGER_SWEEP_MS = 1_000; // expired isolates and probes are looked for at most once a second

/**
 * Shared truth of one pool (`pool:<name>`): circuit breakers, active health checks,
 * the in-flight load reported by every isolate, and request counters. Isolates do not
 * call it per request: each keeps a view and exchanges batches with it (`sync`) at most
 * every `SYNC_INTERVAL_MS` (src/app/state/pool-agent.ts), so its load grows with the number
 * of busy isolates, not with requests. Half-open probes are the exception: admitting
 * one is a decision for the whole pool (`admitProbe`).
 *
 * Storage schema (SQLite):
 *   spec(id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT)   -- the newest PoolSpec seen, for alarms,
 *                                                             -- without the replicas' api keys (kept in memory;
 *                                                             -- after a restart the next sync or the cron's
 *                                                             -- announce, within a minute, brings them back)
 *   circuits(replica TEXT PRIMARY KEY, json TEXT)             -- CircuitState, written when its phase or timers change
 *   health(replica TEXT PRIMARY KEY, healthy INTEGER, checked_at INTEGER)
 *   applied(isolate TEXT PRIMARY KEY, seq INTEGER, seen_at INTEGER)   -- ./applied-store.ts
 * Batches are applied once (src/core/state/applied-ledger.ts). A batch's only durable
 * effect is a circuit row, so the isolate's applied seq is written in the same
 * transaction as that row, and only then: a restart cannot count a stored trip twice,
 * and a batch whose effects were all in memory (lost with the restart) may count again
 * in the new object, once.
 * Memory only, by design:
 *   ledger   isolate → {seq, in-flight per replica, expires_at}. A restart forgets it and
 *            isolates re-report within a heartbeat; in-flight is a load signal, not an
 *            account.
 *   probes   token → {replica, expires_at}: half-open slots handed out; an unreported one
 *            is freed at expiry.
 *   metrics  replica → {last good vLLM metrics sample (with its TPOT from the histogram's growth
 *            since the sample before), failed scrapes since}.
 *   prefix   the recent prefix-cache inserts of every isolate (src/core/pool/prefix-log.ts,
 *            at most 100,000 block hashes, ~1 MB), handed to the others with their syncs.
 *   counters requests, attempts, fallbacks, transitions (Prometheus reads a restart as a reset).
 */
export class PoolState extends DurableObject {
  #spec: PoolSpec | null = null;
  /** False while the spec is the one read back from storage, whose replicas' api keys were never stored. */
  #credentialsKnown = false;
  #circuits = new Map<string, CircuitState>();
  #health = new Map<string, { healthy: boolean; checkedAt: number }>();
  #nextHealthAt = 0;
  #metrics = new Map<string, { sample: ReplicaMetrics | null; failures: number }>();
  #ledger = new IsolateLedger(ISOLATE_REPORT_TTL_MS, LEDGER_SWEEP_MS);
  #applied = new AppliedLedger();
  #probes = new Map<string, { replica: string; expiresAt: number }>();
  #nextProbeSweep = 0;
  #counters = new CounterSet();
  #prefixLog = new PrefixLog();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS spec (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS circuits (replica TEXT PRIMARY KEY, json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS health (replica TEXT PRIMARY KEY, healthy INTEGER NOT NULL, checked_at INTEGER NOT NULL)");
      createAppliedTable(sql);
      loadApplied(sql, this.#applied);
      const spec = sql.exec<{ json: string }>("SELECT json FROM spec").toArray()[0];
      if (spec) this.#spec = JSON.parse(spec.json) as PoolSpec;
      for (const row of sql.exec<{ replica: string; json: string }>("SELECT replica, json FROM circuits")) {
        this.#circuits.set(row.replica, JSON.parse(row.json) as CircuitState);
      }
      for (const row of sql.exec<{ replica: string; healthy: number; checked_at: number }>("SELECT * FROM health")) {
        this.#health.set(row.replica, { healthy: row.healthy === 1, checkedAt: row.checked_at });
      }
    });
  }

  /** An isolate's report (load, outcomes, counters) in; the pool's state, as that isolate needs it, out. */
  async sync(request: PoolSyncRequest): Promise<PoolView> {
    const now = clock.now();
    if (request.spec) await this.#adopt(request.spec, now);
    this.#sweepProbes(now);
    this.#ledger.report(request.isolate, request.seq, request.inflight, now);
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sweepApplied(sql, this.#applied, now);
      let stored = false;
      for (const batch of this.#applied.accept(request.isolate, request.batches, now)) stored = this.#apply(request.isolate, batch) || stored;
      if (stored) saveApplied(sql, this.#applied, request.isolate, now);
    });
    return this.#view(request.isolate, request.prefixCursor, now);
  }

  /**
   * A config's spec for this pool, told without a request: when a config is published or
   * on the Worker's cron, so health checks start before any traffic comes.
   */
  async adopt(spec: PoolSpec): Promise<void> {
    await this.#adopt(spec, clock.now());
  }

  /** Admits a half-open probe if the pool has a slot: one decision for every isolate. */
  async admitProbe(request: ProbeRequest): Promise<ProbeResult> {
    const now = clock.now();
    await this.#adopt(request.spec, now);
    this.#sweepProbes(now);
    const spec = this.#spec!;
    const before = this.#circuits.get(request.replica) ?? newCircuit();
    const admission = admit(before, now, spec.circuit);
    this.#saveCircuits(new Map([[request.replica, admission.state]]), admission.transition ? [{ replica: request.replica, transition: admission.transition }] : []);
    let token: string | null = null;
    if (admission.admission === "probe") {
      token = crypto.randomUUID();
      this.#probes.set(token, { replica: request.replica, expiresAt: now + request.ttlMs });
    }
    return { admission: admission.admission, token, circuit: admission.state };
  }

  async snapshot(): Promise<PoolSnapshot> {
    const now = clock.now();
    this.#ledger.sweep(now);
    this.#sweepProbes(now);
    const replicas = (this.#spec?.replicas ?? []).map((r) => {
      const circuit = this.#circuits.get(r.id) ?? newCircuit();
      const health = this.#health.get(r.id);
      return {
        id: r.id,
        circuit: circuit.phase,
        reopenAt: circuit.reopenAt,
        inflight: this.#ledger.inflight(r.id),
        healthy: health?.healthy ?? null,
        checkedAt: health?.checkedAt ?? null,
        metrics: this.#metrics.get(r.id)?.sample ?? null,
        scrapeFailures: this.#metrics.get(r.id)?.failures ?? 0,
      };
    });
    return {
      pool: this.#spec?.pool ?? "",
      version: this.#spec?.version ?? null,
      replicas,
      isolates: this.#ledger.liveIsolates,
      requests: this.#counters.samples("requests"),
      attempts: this.#counters.samples("attempts"),
      fallbacks: this.#counters.samples("fallbacks"),
      transitions: this.#counters.samples("transitions"),
    };
  }

  /**
   * The pool's own timer: active health checks every `health_check` seconds, and the
   * replicas' metrics every `metrics.scrape_ms`. One alarm serves both, set to the nearer.
   */
  override async alarm(): Promise<void> {
    const spec = this.#spec;
    if (!spec) return;
    const now = clock.now();
    // Without scraping every alarm is a health check, as the interval set it.
    const health = spec.healthCheckS > 0 && (spec.metrics.scrapeMs === 0 || now >= this.#nextHealthAt);
    await Promise.all([health ? this.#checkHealth(spec) : undefined, spec.metrics.scrapeMs > 0 ? this.#scrape(spec) : undefined]);
    if (health) this.#nextHealthAt = now + spec.healthCheckS * 1000;
    const next = nextPeriodMs(spec);
    if (next !== null) await this.ctx.storage.setAlarm(Date.now() + next);
  }

  /** GET each replica's health path; the result feeds its circuit. */
  async #checkHealth(spec: PoolSpec): Promise<void> {
    const results = await Promise.all(spec.replicas.map(async (r) => ({ id: r.id, healthy: await probeHealth(upstreamUrl(r.url, spec.healthPath), spec.healthCheckS * 1000, r.apiKey) })));
    const now = clock.now();
    const changed = new Map<string, CircuitState>();
    const transitions: ReplicaTransition[] = [];
    for (const { id, healthy } of results) {
      this.#health.set(id, { healthy, checkedAt: now });
      this.ctx.storage.sql.exec("INSERT OR REPLACE INTO health (replica, healthy, checked_at) VALUES (?, ?, ?)", id, healthy ? 1 : 0, now);
      const observed = healthObserved(this.#circuits.get(id) ?? newCircuit(), healthy, now, spec.circuit);
      changed.set(id, observed.state);
      if (observed.transition) transitions.push({ replica: id, transition: observed.transition });
    }
    this.#saveCircuits(changed, transitions);
  }

  /**
   * GET each replica's metrics. A failed scrape keeps the last good sample, which ages
   * (isolates stop routing on it once it is older than stale_ms); after failure_threshold
   * failures in a row it is dropped. Failing scrapes never touch a circuit: a replica
   * whose /metrics is down may still serve, and is then routed on load alone.
   */
  async #scrape(spec: PoolSpec): Promise<void> {
    const m = spec.metrics;
    const samples = await Promise.all(spec.replicas.map(async (r) => [r.id, await scrapeMetrics(upstreamUrl(r.url, m.path), m.timeoutMs, clock.now, r.apiKey)] as const));
    for (const [id, sample] of samples) {
      const before = this.#metrics.get(id);
      if (sample) this.#metrics.set(id, { sample: withTpot(sample, before?.sample ?? null), failures: 0 });
      else {
        const failures = (before?.failures ?? 0) + 1;
        this.#metrics.set(id, { sample: failures >= m.failureThreshold ? null : (before?.sample ?? null), failures });
      }
    }
  }

  #view(isolate: string, prefixCursor: number, now: number): PoolView {
    return {
      version: this.#spec?.version ?? null,
      at: now,
      acked: this.#applied.applied(isolate),
      prefix: this.#prefixLog.since(prefixCursor, isolate),
      replicas: (this.#spec?.replicas ?? []).map((r) => ({
        id: r.id,
        circuit: this.#circuits.get(r.id) ?? newCircuit(),
        others: this.#ledger.inflight(r.id, isolate),
        healthy: this.#health.get(r.id)?.healthy ?? null,
        metrics: this.#metrics.get(r.id)?.sample ?? null,
      })),
    };
  }

  /** Applies one batch; true when it wrote a circuit row (a durable effect). */
  #apply(isolate: string, batch: PoolNews): boolean {
    this.#prefixLog.append(isolate, batch.prefix ?? []);
    const spec = this.#spec;
    let stored = false;
    if (spec) {
      // A probe's token releases its slot once; a token already swept counts as a plain outcome.
      const { changed, transitions } = applyOutcomes(this.#circuits, batch.outcomes, spec, (o) => o.probe !== null && this.#probes.delete(o.probe));
      stored = this.#saveCircuits(changed, transitions) > 0;
    }
    for (const s of batch.requests) this.#counters.add("requests", s.labels, s.value);
    for (const s of batch.attempts) this.#counters.add("attempts", s.labels, s.value);
    for (const s of batch.fallbacks) this.#counters.add("fallbacks", s.labels, s.value);
    return stored;
  }

  async #adopt(spec: PoolSpec, now: number): Promise<void> {
    const previous = this.#spec;
    // Version ids sort by publish time. While a rollout converges, isolates on the older
    // version still route with their own spec, but only a newer one is stored. A spec read
    // back from storage has no credentials: the same version, told again, brings them.
    if (previous && previous.pool === spec.pool && (spec.version < previous.version || (spec.version === previous.version && this.#credentialsKnown))) return;
    this.#spec = spec;
    this.#credentialsKnown = true;
    if (previous?.version === spec.version) return; // credentials only: nothing else changed
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO spec (id, json) VALUES (1, ?)", JSON.stringify(withoutCredentials(spec)));
    const ids = new Set(spec.replicas.map((r) => r.id));
    for (const replica of [...this.#circuits.keys()]) {
      if (ids.has(replica)) continue;
      this.#circuits.delete(replica);
      this.#health.delete(replica);
      this.#metrics.delete(replica);
      this.#prefixLog.dropReplica(replica);
      this.ctx.storage.sql.exec("DELETE FROM circuits WHERE replica = ?", replica);
      this.ctx.storage.sql.exec("DELETE FROM health WHERE replica = ?", replica);
    }
    const period = nextPeriodMs(spec);
    const changedTimers = previous?.healthCheckS !== spec.healthCheckS || previous?.metrics.scrapeMs !== spec.metrics.scrapeMs;
    if (period === null) await this.ctx.storage.deleteAlarm();
    else if (changedTimers || (await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(now + Math.min(period, FIRST_ALARM_DELAY_MS));
    }
  }

  /** A probe whose verdict never came back must not hold the half-open slot forever. */
  #sweepProbes(now: number): void {
    if (now < this.#nextProbeSweep) return;
    this.#nextProbeSweep = now + LEDGER_SWEEP_MS;
    const changed = new Map<string, CircuitState>();
    for (const [token, probe] of this.#probes) {
      if (probe.expiresAt > now) continue;
      this.#probes.delete(token);
      const circuit = changed.get(probe.replica) ?? this.#circuits.get(probe.replica);
      if (circuit) changed.set(probe.replica, releaseProbe(circuit));
    }
    this.#saveCircuits(changed, []);
  }

  /** Keeps changed circuits; returns how many rows it wrote. */
  #saveCircuits(changed: Map<string, CircuitState>, transitions: ReplicaTransition[]): number {
    let written = 0;
    for (const [replica, state] of changed) {
      const before = this.#circuits.get(replica);
      this.#circuits.set(replica, state);
      if (before && !durablyDifferent(before, state)) continue;
      this.ctx.storage.sql.exec("INSERT OR REPLACE INTO circuits (replica, json) VALUES (?, ?)", replica, JSON.stringify(state));
      written++;
    }
    for (const { replica, transition } of transitions) {
      this.#counters.add("transitions", { replica, from: transition.from, to: transition.to });
      console.log(JSON.stringify({ event: "circuit_transition", pool: this.#spec?.pool, replica, ...transition }));
    }
    return written;
  }
}

const FIRST_ALARM_DELAY_MS = 1_000; // check and scrape soon after a pool appears, not a whole interval later

/** The alarm's period: the nearer of the health-check and scrape intervals, or null when both are off. */
function nextPeriodMs(spec: PoolSpec): number | null {
  const periods = [spec.healthCheckS * 1000, spec.metrics.scrapeMs].filter((ms) => ms > 0);
  return periods.length === 0 ? null : Math.min(...periods);
}

/** A spec as stored: every replica's credential left out. */
function withoutCredentials(spec: PoolSpec): PoolSpec {
  return { ...spec, replicas: spec.replicas.map(({ apiKey: _apiKey, ...replica }) => replica) };
}
