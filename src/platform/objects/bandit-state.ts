import { DurableObject } from "cloudflare:workers";
import type { BanditParams, BanditStateSnapshot, BanditState as ArmState, SeededRandomSource } from "../../core/graph/bandits";
import { applyFeedback, checkFeedback, chooseArm, initialState, normalizeParams, seededRandom } from "../../core/graph/bandits";
import type { RandomSource } from "../../lib/random";
import { cryptoRandom } from "../../lib/random";
import { clock } from "./clock";

export type { BanditStateSnapshot } from "../../core/graph/bandits";

/**
 * Arm statistics of one bandit router node (`bandit:<graph>/<node>`), shared by every
 * isolate in every colo. Seldon keeps this state per replica, in memory, and its Redis
 * variant updates it non-atomically; here each update is one read-modify-write inside
 * the object, made of synchronous storage calls only (no await in between), so
 * concurrent feedback from any number of isolates is counted exactly.
 *
 * Storage schema (SQLite):
 *   node(id INTEGER PRIMARY KEY CHECK (id = 1),
 *        params TEXT,          -- normalised BanditParams (JSON) the arms belong to
 *        best INTEGER,         -- epsilon-greedy: arm exploited; Thompson: best posterior mean
 *        draws INTEGER,        -- seeded params: uint32s drawn so far (resume position), else 0
 *        updated_at INTEGER)   -- epoch ms of the last write (creation, reset, feedback)
 *   arms(arm INTEGER PRIMARY KEY, tries INTEGER, successes REAL)   -- one row per arm, 0-based
 * Every write goes through `transactionSync`, so node and arms never disagree.
 *
 * Params changes. The caller sends the node's params on every call; the object adopts
 * them. The arms are RESET (zero counts, fresh initial best) when `kind` or `n_branches`
 * changes, or when both old and new params name the branches and the names differ: the
 * old counts would belong to other arms. Other changes (epsilon, prior) keep the counts.
 * `best_branch` is only read when the arms are created. A new `seed` restarts its
 * sequence at position 0. During a rollout that changes the shape, isolates on the old
 * and the new config would reset each other until the rollout completes.
 *
 * Randomness. Web Crypto unless `seed` is set; then a SplitMix32 source whose position
 * is stored in `draws` after every call that drew, so a restarted or evicted object
 * continues the sequence instead of replaying it. That costs one row write per choice,
 * acceptable for the reproducible (test, replay) mode it serves.
 */
export class BanditState extends DurableObject {
  #current: { params: BanditParams; arms: ArmState; updatedAt: number } | null = null;
  #random: RandomSource = cryptoRandom();
  #seeded: SeededRandomSource | null = null;

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec(
        "CREATE TABLE IF NOT EXISTS node (id INTEGER PRIMARY KEY CHECK (id = 1), params TEXT NOT NULL, best INTEGER NOT NULL, draws INTEGER NOT NULL, updated_at INTEGER NOT NULL)",
      );
      sql.exec("CREATE TABLE IF NOT EXISTS arms (arm INTEGER PRIMARY KEY, tries INTEGER NOT NULL, successes REAL NOT NULL)");
      const node = sql
        .exec<{ params: string; best: number; draws: number; updated_at: number }>("SELECT params, best, draws, updated_at FROM node")
        .toArray()[0];
      if (!node) return;
      const params = JSON.parse(node.params) as BanditParams;
      const arms = sql
        .exec<{ tries: number; successes: number }>("SELECT tries, successes FROM arms ORDER BY arm")
        .toArray()
        .map((r) => ({ tries: r.tries, successes: r.successes }));
      this.#current = { params, arms: { arms, best: node.best }, updatedAt: node.updated_at };
      this.#useRandom(params, node.draws);
    });
  }

  /** The arm for one request. Creates (or resets) the node's state on first use. */
  async choose(params: BanditParams): Promise<{ arm: number }> {
    const current = this.#adopt(normalizeParams(params));
    const before = this.#seeded?.position;
    const arm = chooseArm(current.params, current.arms, this.#random);
    if (this.#seeded && this.#seeded.position !== before) {
      this.ctx.storage.sql.exec("UPDATE node SET draws = ? WHERE id = 1", this.#seeded.position);
    }
    return { arm };
  }

  /**
   * Feedback for `arm` on a request of `rows` rows (see `applyFeedback` for the reward
   * rules). Throws RangeError, before anything changes, for an arm outside the params'
   * branches, a reward outside [0, 1] or rows outside [1, MAX_FEEDBACK_ROWS]: the
   * caller's error, a 400.
   */
  async feedback(params: BanditParams, arm: number, reward: number, rows: number): Promise<BanditStateSnapshot> {
    const normalized = normalizeParams(params);
    checkFeedback(normalized, arm, reward, rows);
    const current = this.#adopt(normalized);
    const next = applyFeedback(current.params, current.arms, arm, reward, rows, this.#random);
    const updatedAt = clock.now();
    const stats = next.arms[arm]!;
    this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      sql.exec("UPDATE arms SET tries = ?, successes = ? WHERE arm = ?", stats.tries, stats.successes, arm);
      sql.exec("UPDATE node SET best = ?, draws = ?, updated_at = ? WHERE id = 1", next.best, this.#seeded?.position ?? 0, updatedAt);
    });
    this.#current = { params: current.params, arms: next, updatedAt };
    return snapshotOf(this.#current);
  }

  /** The node's state, or null before its first choice or feedback. */
  async snapshot(): Promise<BanditStateSnapshot | null> {
    return this.#current ? snapshotOf(this.#current) : null;
  }

  /** The state for `params`: as stored, with the params updated, or fresh (see the class comment). */
  #adopt(params: BanditParams) {
    const current = this.#current;
    if (current && !needsReset(current.params, params)) {
      if (JSON.stringify(current.params) === JSON.stringify(params)) return current;
      const reseed = (current.params.seed ?? null) !== (params.seed ?? null);
      if (reseed) this.#useRandom(params, 0);
      const draws = this.#seeded?.position ?? 0;
      this.ctx.storage.sql.exec("UPDATE node SET params = ?, draws = ? WHERE id = 1", JSON.stringify(params), draws);
      this.#current = { ...current, params };
      return this.#current;
    }

    if (!current || (current.params.seed ?? null) !== (params.seed ?? null)) this.#useRandom(params, 0);
    const arms = initialState(params, this.#random);
    const updatedAt = clock.now();
    this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      sql.exec("DELETE FROM arms");
      for (let i = 0; i < params.n_branches; i++) sql.exec("INSERT INTO arms (arm, tries, successes) VALUES (?, 0, 0)", i);
      sql.exec(
        "INSERT OR REPLACE INTO node (id, params, best, draws, updated_at) VALUES (1, ?, ?, ?, ?)",
        JSON.stringify(params),
        arms.best,
        this.#seeded?.position ?? 0,
        updatedAt,
      );
    });
    this.#current = { params, arms, updatedAt };
    return this.#current;
  }

  #useRandom(params: BanditParams, position: number): void {
    const seed = params.seed ?? null;
    this.#seeded = seed === null ? null : seededRandom(seed, position);
    this.#random = this.#seeded ?? cryptoRandom();
  }
}

/** Counts from `before` would be attributed to other arms under `after`. */
function needsReset(before: BanditParams, after: BanditParams): boolean {
  if (before.kind !== after.kind || before.n_branches !== after.n_branches) return true;
  const a = before.branch_names;
  const b = after.branch_names;
  return a !== undefined && b !== undefined && a.some((name, i) => name !== b[i]);
}

function snapshotOf(current: { params: BanditParams; arms: ArmState; updatedAt: number }): BanditStateSnapshot {
  return {
    params: structuredClone(current.params),
    arms: current.arms.arms.map((a) => ({ ...a })),
    best: current.arms.best,
    updatedAt: current.updatedAt,
  };
}

