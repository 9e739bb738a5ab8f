import { DurableObject } from "cloudflare:workers";
import type { CircuitState } from "../../core/health/circuit";
import type { AlarmChange, PoolWrites } from "../../core/pool/machine";
import { PoolMachine } from "../../core/pool/machine";
import type { PoolSnapshot, PoolSpec, PoolSyncRequest, PoolView, ProbeRequest, ProbeResult } from "../../core/pool/wire";
import { scrapeTimeoutMs } from "../../core/pool/replica-checks";
import { upstreamUrl } from "../../core/upstream/url";
import { createAppliedTable, deleteApplied, loadApplied, saveApplied } from "./applied-store";
import { clock } from "./clock";
import { probeHealth, scrapeMetrics } from "./replica-probes";

export { ISOLATE_REPORT_TTL_MS } from "../../core/pool/machine";

/**
 * Shared truth of one pool (`pool:<name>`): circuit breakers, active health checks,
 * the in-flight load reported by every isolate, and request counters. Isolates do not
 * call it per request: each keeps a view and exchanges batches with it (`sync`) at most
 * every `SYNC_INTERVAL_MS` (src/app/state/pool-agent.ts), so its load grows with the number
 * of busy isolates, not with requests. Half-open probes are the exception: admitting
 * one is a decision for the whole pool (`admitProbe`).
 *
 * The rules are PoolMachine's (src/core/pool/machine.ts), a pure machine; this class is
 * its storage adapter, its I/O (the health checks and metrics scrapes it fetches on its
 * alarm, and the alarm itself) and its RPC surface. Each call hands the machine the
 * domain time, and writes what the machine's `PoolWrites` name in one transaction: plain
 * data rather than a storage port, because every effect the machine has on storage is
 * a whole row to replace or delete, and one transaction per call keeps a batch's circuit
 * rows and its applied seq together.
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
 *            since the sample before), failed scrapes since, when one last succeeded}; and which
 *            checks are running (one per replica scrape, one for health), so none is started twice.
 *   prefix   the recent prefix-cache inserts of every isolate (src/core/pool/prefix-log.ts,
 *            at most 100,000 block hashes, ~1 MB), handed to the others with their syncs.
 *   counters requests, attempts, fallbacks, transitions (Prometheus reads a restart as a reset).
 */
export class PoolState extends DurableObject {
  #machine = new PoolMachine(() => crypto.randomUUID());
  /** Checks started by an alarm and not yet answered: "health", or "scrape:<replica>". */
  #running = new Map<string, Promise<void>>();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS spec (id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS circuits (replica TEXT PRIMARY KEY, json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS health (replica TEXT PRIMARY KEY, healthy INTEGER NOT NULL, checked_at INTEGER NOT NULL)");
      createAppliedTable(sql);
      loadApplied(sql, this.#machine.ledger);
      const spec = sql.exec<{ json: string }>("SELECT json FROM spec").toArray()[0];
      if (spec) this.#machine.restoreSpec(JSON.parse(spec.json) as PoolSpec, clock.now());
      for (const row of sql.exec<{ replica: string; json: string }>("SELECT replica, json FROM circuits")) {
        this.#machine.restoreCircuit(row.replica, JSON.parse(row.json) as CircuitState);
      }
      for (const row of sql.exec<{ replica: string; healthy: number; checked_at: number }>("SELECT * FROM health")) {
        this.#machine.restoreHealth(row.replica, { healthy: row.healthy === 1, checkedAt: row.checked_at });
      }
    });
  }

  /** An isolate's report (load, outcomes, counters) in; the pool's state, as that isolate needs it, out. */
  async sync(request: PoolSyncRequest): Promise<PoolView> {
    const now = clock.now();
    const { view, writes } = this.#machine.sync(request, now);
    await this.#store(writes, now);
    return view;
  }

  /**
   * A config's spec for this pool, told without a request: when a config is published or
   * on the Worker's cron, so health checks start before any traffic comes.
   */
  async adopt(spec: PoolSpec): Promise<void> {
    const now = clock.now();
    await this.#store(this.#machine.adopt(spec, now), now);
  }

  /** Admits a half-open probe if the pool has a slot: one decision for every isolate. */
  async admitProbe(request: ProbeRequest): Promise<ProbeResult> {
    const now = clock.now();
    const { result, writes } = this.#machine.admitProbe(request, now);
    await this.#store(writes, now);
    return result;
  }

  async snapshot(): Promise<PoolSnapshot> {
    const now = clock.now();
    const { snapshot, writes } = this.#machine.snapshot(now);
    await this.#store(writes, now);
    return snapshot;
  }

  /**
   * The pool's own timer: active health checks every `health_check` seconds, and the
   * replicas' metrics every `metrics.scrape_ms`. One alarm serves both, set to the nearer.
   * The next alarm is set before any check starts and no check is awaited here: each
   * replica's scrape runs on its own with its own timeout (scrapeTimeoutMs), so one that
   * hangs holds up neither another replica's scrape nor the next alarm. A check still
   * running when its next turn comes is not started again.
   */
  override async alarm(): Promise<void> {
    const due = this.#machine.checksDue(clock.now());
    if (!due) return;
    if (due.nextInMs !== null) await this.ctx.storage.setAlarm(Date.now() + due.nextInMs);
    if (due.health) this.#start("health", () => this.#checkHealth(due.spec));
    if (due.scrape) for (const replica of due.spec.replicas) this.#start(`scrape:${replica.id}`, () => this.#scrape(due.spec, replica));
  }

  /** Resolves once every check started so far has answered: what an alarm did, for whoever ran it (tests, after runDurableObjectAlarm). */
  async checksSettled(): Promise<void> {
    await Promise.all(this.#running.values());
  }

  /** Starts a check unless the last one under this key is still running; the object stays up until it ends. */
  #start(key: string, check: () => Promise<void>): void {
    if (this.#running.has(key)) return;
    const running = check()
      .catch((error: unknown) => console.error(JSON.stringify({ event: "pool_check_failed", pool: this.#machine.spec?.pool, check: key, error: (error as Error)?.name ?? "unknown" })))
      .finally(() => this.#running.delete(key));
    this.#running.set(key, running);
    this.ctx.waitUntil(running);
  }

  /** GET each replica's health path; the results feed the circuits. */
  async #checkHealth(spec: PoolSpec): Promise<void> {
    const results = await Promise.all(spec.replicas.map(async (r) => {
      const url = joined(r.url, spec.healthPath);
      return { id: r.id, healthy: url !== null && (await probeHealth(url, spec.healthCheckS * 1000, r)) };
    }));
    const now = clock.now();
    await this.#store(this.#machine.healthChecked(spec, results, now), now);
  }

  /** GET one replica's metrics (the machine keeps the last good sample; a failure never touches a circuit). */
  async #scrape(spec: PoolSpec, replica: PoolSpec["replicas"][number]): Promise<void> {
    const url = joined(replica.url, spec.metrics.path);
    if (url === null) return this.#machine.scraped(spec, [[replica.id, null, "metrics path refused by the URL join"]]);
    const answer = await scrapeMetrics(url, scrapeTimeoutMs(spec), clock.now, replica);
    this.#machine.scraped(spec, ["metrics" in answer ? [replica.id, answer.metrics] : [replica.id, null, answer.error]]);
  }

  /** Writes what a call changed in one transaction, logs its circuit transitions, then moves the alarm. */
  async #store(writes: PoolWrites, now: number): Promise<void> {
    if (writes.forgotten.length + writes.removed.length + writes.circuits.size + writes.health.size > 0 || writes.spec || writes.applied !== null) {
      this.ctx.storage.transactionSync(() => this.#write(writes, now));
    }
    const pool = this.#machine.spec?.pool;
    for (const { replica, transition } of writes.transitions) console.log(JSON.stringify({ event: "circuit_transition", pool, replica, ...transition }));
    await this.#moveAlarm(writes.alarm);
  }

  #write(writes: PoolWrites, now: number): void {
    const sql = this.ctx.storage.sql;
    deleteApplied(sql, writes.forgotten);
    if (writes.spec) sql.exec("INSERT OR REPLACE INTO spec (id, json) VALUES (1, ?)", JSON.stringify(writes.spec));
    for (const replica of writes.removed) {
      sql.exec("DELETE FROM circuits WHERE replica = ?", replica);
      sql.exec("DELETE FROM health WHERE replica = ?", replica);
    }
    for (const [replica, state] of writes.circuits) sql.exec("INSERT OR REPLACE INTO circuits (replica, json) VALUES (?, ?)", replica, JSON.stringify(state));
    for (const [replica, h] of writes.health) sql.exec("INSERT OR REPLACE INTO health (replica, healthy, checked_at) VALUES (?, ?, ?)", replica, h.healthy ? 1 : 0, h.checkedAt);
    // The isolate's applied seq with the circuit rows its batches wrote: a restart cannot apply them again.
    if (writes.applied !== null) saveApplied(sql, this.#machine.ledger, writes.applied, now);
  }

  async #moveAlarm(alarm: AlarmChange | null): Promise<void> {
    if (alarm === null) return;
    if (alarm === "delete") await this.ctx.storage.deleteAlarm();
    else if (alarm.replace || (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(alarm.at);
  }
}

/** A replica's URL for a configured path, or null when the join refuses it (a path that would leave the replica's origin: the check fails, nothing is sent). */
function joined(base: string, path: string): string | null {
  try {
    return upstreamUrl(base, path);
  } catch {
    return null;
  }
}
