import { DurableObject } from "cloudflare:workers";
import type { BanditParams, BanditStateSnapshot } from "../../core/graph/bandits";
import type { BanditWrites } from "../../core/graph/bandit-node";
import { BanditNode } from "../../core/graph/bandit-node";
import type { BanditSync, BanditView } from "../../core/graph/bandit-wire";
import { cryptoRandom } from "../../lib/random";
import { clock } from "./clock";
import { createAppliedTable, loadApplied, saveApplied, sweepApplied } from "./applied-store";

export type { BanditStateSnapshot } from "../../core/graph/bandits";

/**
 * Arm statistics of one bandit router node (`bandit:<graph>/<node>`), shared by every
 * isolate in every colo: the storage adapter of BanditNode (src/core/graph/bandit-node.ts,
 * which also says how a change of params is handled). Seldon keeps this state per
 * replica, in memory, and its Redis variant updates it non-atomically; here isolates
 * send feedback in sequence-numbered batches (src/app/state/bandit-agent.ts), each
 * applied once, by synchronous storage calls only (no await in between), so concurrent
 * feedback from any number of isolates is counted exactly, and a batch whose answer was
 * lost is not counted twice.
 *
 * Storage schema (SQLite):
 *   node(id INTEGER PRIMARY KEY CHECK (id = 1),
 *        params TEXT,          -- normalised BanditParams (JSON) the arms belong to
 *        best INTEGER,         -- epsilon-greedy: arm exploited; Thompson: best posterior mean
 *        draws INTEGER,        -- seeded params: uint32s drawn so far (resume position), else 0
 *        updated_at INTEGER)   -- epoch ms of the last write (creation, reset, feedback)
 *   arms(arm INTEGER PRIMARY KEY, tries INTEGER, successes REAL)   -- one row per arm, 0-based
 *   applied(isolate TEXT PRIMARY KEY, seq INTEGER, seen_at INTEGER)  -- ./applied-store.ts
 * Every write goes through `transactionSync`, so node, arms and the isolates' applied
 * seqs never disagree: a batch's credits and the record that it was applied are stored
 * together, so a restart cannot apply it again.
 *
 * Randomness. Web Crypto unless `seed` is set; then a SplitMix32 source whose position
 * is stored in `draws` after every call that drew, so a restarted or evicted object
 * continues the sequence instead of replaying it. Seeded nodes are chosen here, one call
 * per request (`choose`), so that every isolate follows the one sequence; that costs an
 * awaited call and a row write per choice, acceptable for the reproducible (test, replay)
 * mode it serves. Unseeded nodes are chosen by each isolate from its view (`sync`).
 */
export class BanditState extends DurableObject {
  #node = new BanditNode(cryptoRandom);

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec(
        "CREATE TABLE IF NOT EXISTS node (id INTEGER PRIMARY KEY CHECK (id = 1), params TEXT NOT NULL, best INTEGER NOT NULL, draws INTEGER NOT NULL, updated_at INTEGER NOT NULL)",
      );
      sql.exec("CREATE TABLE IF NOT EXISTS arms (arm INTEGER PRIMARY KEY, tries INTEGER NOT NULL, successes REAL NOT NULL)");
      createAppliedTable(sql);
      loadApplied(sql, this.#node.ledger);
      const node = sql
        .exec<{ params: string; best: number; draws: number; updated_at: number }>("SELECT params, best, draws, updated_at FROM node")
        .toArray()[0];
      if (!node) return;
      const arms = sql
        .exec<{ tries: number; successes: number }>("SELECT tries, successes FROM arms ORDER BY arm")
        .toArray()
        .map((r) => ({ tries: r.tries, successes: r.successes }));
      this.#node.restore({ params: JSON.parse(node.params) as BanditParams, arms: { arms, best: node.best }, draws: node.draws, updatedAt: node.updated_at });
    });
  }

  /** The arm for one request of a seeded node. Creates (or resets) the node's state on first use. */
  async choose(params: BanditParams): Promise<{ arm: number }> {
    const now = clock.now();
    const { arm, writes } = this.#node.choose(params, now);
    this.#store(writes, now);
    return { arm };
  }

  /** An isolate's batches of feedback in, each applied once; the node's arms out. Creates (or resets) the node's state on first use. */
  async sync(request: BanditSync): Promise<BanditView> {
    const now = clock.now();
    const { view, writes } = this.#node.sync(request, now);
    this.#store(writes, now);
    if (writes.refused > 0) console.warn(JSON.stringify({ event: "bandit_feedback_refused", object: this.ctx.id.name, items: writes.refused }));
    return view;
  }

  /** The node's state, or null before its first choice or sync. */
  async snapshot(): Promise<BanditStateSnapshot | null> {
    return this.#node.snapshot();
  }

  #store(writes: BanditWrites, now: number): void {
    const stored = this.#node.stored;
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sweepApplied(sql, this.#node.ledger, now);
      if (!stored || !(writes.arms || writes.node)) return;
      if (writes.arms) {
        sql.exec("DELETE FROM arms");
        stored.arms.arms.forEach((a, i) => sql.exec("INSERT INTO arms (arm, tries, successes) VALUES (?, ?, ?)", i, a.tries, a.successes));
      }
      sql.exec(
        "INSERT OR REPLACE INTO node (id, params, best, draws, updated_at) VALUES (1, ?, ?, ?, ?)",
        JSON.stringify(stored.params),
        stored.arms.best,
        stored.draws,
        stored.updatedAt,
      );
      if (writes.applied !== null) saveApplied(sql, this.#node.ledger, writes.applied, now);
    });
  }
}
