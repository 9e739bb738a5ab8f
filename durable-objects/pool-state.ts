import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";
import type { CircuitState } from "../src/routing/circuit";
import { healthObserved, newCircuit, releaseProbe } from "../src/routing/circuit";
import { cryptoRandom } from "../src/routing/random";
import type { ReplicaTransition } from "../src/state/choose";
import { applyFinish, choose } from "../src/state/choose";
import type { AcquireRequest, AcquireResult, FinishReport, PoolSnapshot, PoolSpec } from "../src/state/types";
import { clock } from "./clock";
import { CounterSet } from "./counters";

/**
 * Shared state of one pool (`pool:<name>`): replica leases (in-flight), circuit
 * breakers, active health checks, request counters. Every isolate in every colo routes
 * through the same object, so they all see the same loads and circuits.
 *
 * Storage schema (SQLite):
 *   spec(id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT)   -- the PoolSpec last synced, for alarms
 *   circuits(replica TEXT PRIMARY KEY, json TEXT)             -- CircuitState, written on every change
 *   health(replica TEXT PRIMARY KEY, healthy INTEGER, checked_at INTEGER)
 * Memory only, by design: leases (a restart drops them; their expiry would have healed
 * them anyway, and in-flight is a load signal, not an account) and counters (Prometheus
 * treats a reset counter as a restart).
 */
export class PoolState extends DurableObject<Env> {
  #spec: PoolSpec | null = null;
  #circuits = new Map<string, CircuitState>();
  #health = new Map<string, { healthy: boolean; checkedAt: number }>();
  #leases = new Map<string, { replica: string; expiresAt: number; probe: boolean }>();
  #inflight = new Map<string, number>();
  #nextLeaseSweep = 0;
  #counters = new CounterSet();
  #random = cryptoRandom();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS spec (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS circuits (replica TEXT PRIMARY KEY, json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS health (replica TEXT PRIMARY KEY, healthy INTEGER NOT NULL, checked_at INTEGER NOT NULL)");
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

  /** Pin check, circuit check, choice and lease: the one round trip before a request is proxied. */
  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const now = clock.now();
    await this.#sync(request.spec, now);
    this.#sweepLeases(now);
    const decision = choose({
      spec: request.spec,
      circuits: this.#circuits,
      inflight: (id) => this.#inflight.get(id) ?? 0,
      pinned: request.pinned,
      forced: request.forced,
      random: this.#random,
      now,
    });
    this.#saveCircuits(decision.changed, decision.transitions);

    let leaseId: string | null = null;
    const first = decision.order[0];
    if (first !== undefined) {
      leaseId = crypto.randomUUID();
      this.#leases.set(leaseId, { replica: first, expiresAt: now + request.leaseTtlMs, probe: decision.probe });
      this.#inflight.set(first, (this.#inflight.get(first) ?? 0) + 1);
    }
    return { order: decision.order, leaseId, probe: decision.probe, pinnedAllowed: decision.pinnedAllowed, failedOpen: decision.failedOpen };
  }

  /** A fallback attempt moves the request's lease to the replica now serving it. */
  async moveLease(leaseId: string, replica: string): Promise<void> {
    const lease = this.#leases.get(leaseId);
    if (!lease || lease.replica === replica) return;
    this.#adjust(lease.replica, -1);
    this.#adjust(replica, +1);
    lease.replica = replica;
  }

  /** Release + outcome: the one call after a request, sent from `ctx.waitUntil`. */
  async finish(report: FinishReport): Promise<void> {
    const now = clock.now();
    const lease = report.leaseId === null ? undefined : this.#leases.get(report.leaseId);
    if (lease && report.leaseId !== null) {
      this.#leases.delete(report.leaseId);
      this.#adjust(lease.replica, -1);
    }
    const spec = this.#spec;
    if (spec) {
      const { changed, transitions } = applyFinish(this.#circuits, report, spec, now);
      this.#saveCircuits(changed, transitions);
    }
    const served = report.attempts[report.attempts.length - 1];
    this.#counters.add("requests", { model: report.model, replica: served?.replica ?? "none", status: String(report.status) });
    for (const attempt of report.attempts) this.#counters.add("attempts", { replica: attempt.replica, verdict: attempt.verdict });
    if (report.attempts.length > 1) this.#counters.add("fallbacks", { model: report.model });
  }

  async snapshot(): Promise<PoolSnapshot> {
    const now = clock.now();
    this.#sweepLeases(now);
    const replicas = (this.#spec?.replicas ?? []).map((r) => {
      const circuit = this.#circuits.get(r.id) ?? newCircuit();
      const health = this.#health.get(r.id);
      return {
        id: r.id,
        circuit: circuit.phase,
        reopenAt: circuit.reopenAt,
        inflight: this.#inflight.get(r.id) ?? 0,
        healthy: health?.healthy ?? null,
        checkedAt: health?.checkedAt ?? null,
      };
    });
    return {
      pool: this.#spec?.pool ?? "",
      version: this.#spec?.version ?? null,
      replicas,
      requests: this.#counters.samples("requests"),
      attempts: this.#counters.samples("attempts"),
      fallbacks: this.#counters.samples("fallbacks"),
      transitions: this.#counters.samples("transitions"),
    };
  }

  /** Active health checks: GET each replica's health path, feed the result to its circuit. */
  override async alarm(): Promise<void> {
    const spec = this.#spec;
    if (!spec || spec.healthCheckS <= 0) return;
    const timeoutMs = Math.min(HEALTH_TIMEOUT_MS, spec.healthCheckS * 1000);
    const results = await Promise.all(
      spec.replicas.map(async (r) => ({ id: r.id, healthy: await probeHealth(new URL(spec.healthPath, r.url).toString(), timeoutMs) })),
    );
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
    await this.ctx.storage.setAlarm(Date.now() + spec.healthCheckS * 1000);
  }

  async #sync(spec: PoolSpec, now: number): Promise<void> {
    const previous = this.#spec;
    // Version ids sort by publish time. While a rollout converges, isolates on the older
    // version still route with the spec they send, but only a newer one is stored.
    if (previous && previous.pool === spec.pool && spec.version <= previous.version) return;
    this.#spec = spec;
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO spec (id, json) VALUES (1, ?)", JSON.stringify(spec));
    const ids = new Set(spec.replicas.map((r) => r.id));
    for (const replica of [...this.#circuits.keys()]) {
      if (ids.has(replica)) continue;
      this.#circuits.delete(replica);
      this.#health.delete(replica);
      this.ctx.storage.sql.exec("DELETE FROM circuits WHERE replica = ?", replica);
      this.ctx.storage.sql.exec("DELETE FROM health WHERE replica = ?", replica);
    }
    const interval = spec.healthCheckS * 1000;
    if (interval <= 0) await this.ctx.storage.deleteAlarm();
    else if (previous?.healthCheckS !== spec.healthCheckS || (await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(now + Math.min(interval, FIRST_HEALTH_CHECK_DELAY_MS));
    }
  }

  #sweepLeases(now: number): void {
    if (now < this.#nextLeaseSweep) return;
    this.#nextLeaseSweep = now + LEASE_SWEEP_INTERVAL_MS;
    for (const [id, lease] of this.#leases) {
      if (lease.expiresAt > now) continue;
      this.#leases.delete(id);
      this.#adjust(lease.replica, -1);
      // A probe whose verdict never came back must not hold the half-open slot forever.
      const circuit = this.#circuits.get(lease.replica);
      if (lease.probe && circuit) this.#circuits.set(lease.replica, releaseProbe(circuit));
    }
  }

  #adjust(replica: string, delta: number): void {
    const next = Math.max(0, (this.#inflight.get(replica) ?? 0) + delta);
    if (next === 0) this.#inflight.delete(replica);
    else this.#inflight.set(replica, next);
  }

  #saveCircuits(changed: Map<string, CircuitState>, transitions: ReplicaTransition[]): void {
    for (const [replica, state] of changed) {
      const before = this.#circuits.get(replica);
      this.#circuits.set(replica, state);
      // Window counts change on every request; storing them would cost a write per
      // request. What a restart must not forget is the phase and its timers.
      if (before && !durablyDifferent(before, state)) continue;
      this.ctx.storage.sql.exec("INSERT OR REPLACE INTO circuits (replica, json) VALUES (?, ?)", replica, JSON.stringify(state));
    }
    for (const { replica, transition } of transitions) {
      this.#counters.add("transitions", { replica, from: transition.from, to: transition.to });
      console.log(JSON.stringify({ event: "circuit_transition", pool: this.#spec?.pool, replica, ...transition }));
    }
  }
}

const HEALTH_TIMEOUT_MS = 5_000; // a health endpoint slower than this is not healthy
const FIRST_HEALTH_CHECK_DELAY_MS = 1_000; // check soon after a pool appears, not a whole interval later
const LEASE_SWEEP_INTERVAL_MS = 1_000; // expired leases are rare; scanning once a second bounds the cost

function durablyDifferent(a: CircuitState, b: CircuitState): boolean {
  return a.phase !== b.phase || a.consecutiveFailures !== b.consecutiveFailures || a.trips !== b.trips || a.reopenAt !== b.reopenAt;
}

async function probeHealth(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}
