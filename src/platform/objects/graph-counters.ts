import { DurableObject } from "cloudflare:workers";
import type { CounterSample } from "../../core/pool/wire";
import type { GraphCountersSync, GraphCountersView, StoredGraphCounter } from "../../core/graph/graph-counters";
import { GraphCountersMachine } from "../../core/graph/graph-counters";
import { clock } from "./clock";
import { createAppliedTable, loadApplied, saveApplied, sweepApplied } from "./applied-store";

/**
 * The request counters of one graph's models (`graph:<graph>`), summed over every
 * isolate: the storage adapter of GraphCountersMachine (src/core/graph/graph-counters.ts).
 * Isolates send what their requests to the graph's models ended with, in batches
 * (src/app/state/graph-counters-agent.ts); /metrics reads the totals.
 *
 * Storage schema (SQLite):
 *   counters(family TEXT, labels TEXT, value REAL, PRIMARY KEY (family, labels))
 *     -- the running total of each counter by label set (its key: [name, value] pairs sorted by name, as JSON)
 *   applied(isolate TEXT PRIMARY KEY, seq INTEGER, seen_at INTEGER)   -- ./applied-store.ts
 * A batch's totals and the isolate's applied seq are written in one transaction, so a
 * resent batch counts once and an eviction loses nothing.
 */
export class GraphCounters extends DurableObject {
  #machine = new GraphCountersMachine();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS counters (family TEXT NOT NULL, labels TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (family, labels))");
      createAppliedTable(sql);
      for (const row of sql.exec<{ family: string; labels: string; value: number }>("SELECT family, labels, value FROM counters")) this.#machine.restoreCounter({ family: row.family, key: row.labels, value: row.value });
      loadApplied(sql, this.#machine.ledger);
    });
  }

  /** An isolate's batches in, each applied once; its acknowledgement out. */
  async sync(request: GraphCountersSync): Promise<GraphCountersView> {
    const now = clock.now();
    const { view, writes } = this.#machine.sync(request, now);
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sweepApplied(sql, this.#machine.ledger, now);
      for (const c of writes.counters) storeCounter(sql, c);
      if (writes.applied !== null) saveApplied(sql, this.#machine.ledger, writes.applied, now);
    });
    return view;
  }

  async snapshot(): Promise<Record<string, CounterSample[]>> {
    return this.#machine.snapshot();
  }
}

function storeCounter(sql: SqlStorage, c: StoredGraphCounter): void {
  sql.exec("INSERT OR REPLACE INTO counters (family, labels, value) VALUES (?, ?, ?)", c.family, c.key, c.value);
}
