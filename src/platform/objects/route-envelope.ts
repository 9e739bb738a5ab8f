import { DurableObject } from "cloudflare:workers";
import type { CircuitState } from "../../core/health/circuit";
import type { EnvelopeWrites, StoredCounter } from "../../core/routewise/envelope-machine";
import { EnvelopeMachine } from "../../core/routewise/envelope-machine";
import type { EnvelopeSettings, EnvelopeSnapshot, EnvelopeState, EnvelopeSync, EnvelopeView, RouteSample } from "../../core/routewise/wire";
import { clock } from "./clock";
import { createAppliedTable, loadApplied, saveApplied, sweepApplied } from "./applied-store";

/**
 * The latency and token envelope of one RouteWise model's routes (`routewise:<model>`),
 * with the routes' shared circuits, its demand and spend: the storage adapter of
 * EnvelopeMachine (src/core/routewise/envelope-machine.ts). Isolates send it what they
 * served and each try's verdict, in batches (src/app/state/routewise/model-agent.ts); it
 * answers each route's percentiles over the window and its circuit. A quota-bearing
 * model serves only once every route has `envelope_min_samples` here.
 *
 * Storage schema (SQLite):
 *   samples(route TEXT, at INTEGER, ttft REAL, total REAL, prompt INTEGER, output INTEGER, cached INTEGER)
 *     -- one row per served request (or calibration probe), at most MAX_SAMPLES_PER_ROUTE
 *     -- per route, rows past the envelope window deleted as new ones come
 *   circuits(route TEXT PRIMARY KEY, json TEXT)   -- CircuitState, written when its phase or timers change
 *   counters(family TEXT, labels TEXT, value REAL, PRIMARY KEY (family, labels))
 *     -- the running total of each counter (spend, tokens, hedges, requests) by label set;
 *     -- labels is the set's key: its [name, value] pairs sorted by name, as JSON
 *   applied(isolate TEXT PRIMARY KEY, seq INTEGER, seen_at INTEGER)   -- ./applied-store.ts
 * A batch's durable effects (sample rows, circuit rows, counter totals) and the
 * isolate's applied seq are written in one transaction, so a batch whose answer was
 * lost, resent before or after a restart, adds its samples and counts once, and an
 * eviction loses no spend: /metrics shows the totals since the object was first used.
 * Memory only, by design:
 *   settings  the routes, window and percentiles, brought by every sync and calibration
 *             (a read before the first since a restart summarizes nothing, and is not kept)
 *   demand    request counts in 5 s buckets over the last minute
 *   windows   a circuit's failure-ratio window (a restart starts it afresh)
 */
export class RouteEnvelope extends DurableObject {
  #machine = new EnvelopeMachine();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS samples (route TEXT NOT NULL, at INTEGER NOT NULL, ttft REAL NOT NULL, total REAL NOT NULL, prompt INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL)");
      sql.exec("CREATE INDEX IF NOT EXISTS samples_route_at ON samples (route, at)");
      sql.exec("CREATE TABLE IF NOT EXISTS circuits (route TEXT PRIMARY KEY, json TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS counters (family TEXT NOT NULL, labels TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (family, labels))");
      createAppliedTable(sql);
      const now = clock.now();
      for (const row of sql.exec<{ route: string; at: number; ttft: number; total: number; prompt: number; output: number; cached: number }>("SELECT * FROM samples ORDER BY at")) {
        this.#machine.restoreSample(row.route, { at: row.at, ttftMs: row.ttft, totalMs: row.total, promptTokens: row.prompt, outputTokens: row.output, cachedTokens: row.cached }, now);
      }
      for (const row of sql.exec<{ route: string; json: string }>("SELECT route, json FROM circuits")) this.#machine.restoreCircuit(row.route, JSON.parse(row.json) as CircuitState);
      for (const row of sql.exec<{ family: string; labels: string; value: number }>("SELECT family, labels, value FROM counters")) this.#machine.restoreCounter({ family: row.family, key: row.labels, value: row.value });
      loadApplied(sql, this.#machine.ledger);
    });
  }

  /** An isolate's batches in (each applied once); every route's envelope and circuit, and the model's demand, out. */
  async sync(request: EnvelopeSync): Promise<EnvelopeView> {
    const now = clock.now();
    const { view, writes } = this.#machine.sync(request, now);
    this.#store(writes, now);
    return view;
  }

  /** Seeds samples without traffic: an operator's calibration (probes, or recent traffic replayed from logs). */
  async seed(settings: EnvelopeSettings, samples: RouteSample[]): Promise<EnvelopeState> {
    const now = clock.now();
    const { state, writes } = this.#machine.seed(settings, samples, now);
    this.#store(writes, now);
    return state;
  }

  async snapshot(): Promise<EnvelopeSnapshot> {
    return this.#machine.snapshot(clock.now());
  }

  #store(writes: EnvelopeWrites, now: number): void {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sweepApplied(sql, this.#machine.ledger, now);
      for (const s of writes.samples) sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", s.route, s.at, s.ttftMs, s.totalMs, s.promptTokens, s.outputTokens, s.cachedTokens);
      for (const [route, n] of writes.trimmed) sql.exec("DELETE FROM samples WHERE rowid IN (SELECT rowid FROM samples WHERE route = ? ORDER BY at, rowid LIMIT ?)", route, n);
      for (const [route, state] of writes.circuits) sql.exec("INSERT OR REPLACE INTO circuits (route, json) VALUES (?, ?)", route, JSON.stringify(state));
      for (const c of writes.counters) storeCounter(sql, c);
      if (writes.applied !== null) saveApplied(sql, this.#machine.ledger, writes.applied, now);
    });
    for (const { route, transition } of writes.transitions) console.log(JSON.stringify({ event: "route_circuit_transition", object: this.ctx.id.name, route, ...transition }));
  }
}

function storeCounter(sql: SqlStorage, c: StoredCounter): void {
  sql.exec("INSERT OR REPLACE INTO counters (family, labels, value) VALUES (?, ?, ?)", c.family, c.key, c.value);
}
