import { DurableObject } from "cloudflare:workers";
import type { PinStore, StoredPin } from "../../core/affinity/shard-machine";
import { ShardMachine } from "../../core/affinity/shard-machine";
import type { PinClaim, PinResult, ShardSnapshot, ShardSync, ShardSyncResult } from "../../core/affinity/wire";
import { clock } from "./clock";

/**
 * One shard of session-affinity pins (`affinity:<n>`, n = key hash mod AFFINITY_SHARDS):
 * (key, model) -> replica with a sliding TTL, the truth every isolate's pin cache
 * follows. An isolate calls it only for a pin it has not cached (`claim`, awaited: a
 * pin created in one isolate is honoured by all) and otherwise in batches off the
 * response path (`sync`: TTL slides, drops after errors, cache hits, revalidation).
 * The rules are ShardMachine's (src/core/affinity/shard-machine.ts); this class is its
 * PinStore in SQLite, its alarm and its RPC surface.
 *
 * Storage schema (SQLite):
 *   pins(key TEXT, model TEXT, pool TEXT, replica TEXT, expires_at INTEGER,
 *        PRIMARY KEY (key, model))             -- key is a SHA-256 hex or "ip:<address>"
 *   pins_by_expiry index on expires_at         -- the alarm sweep and its next wake-up
 * One alarm per shard, set to the earliest expiry; it deletes expired pins and counts
 * them as `expired`. Event counters live in memory (a restart reads as a counter reset).
 * Batches are applied once (src/core/state/applied-ledger.ts), with the ledger in memory
 * only: a batch's durable effects (TTL slides, drops) are idempotent, and its counted
 * effect (cache hits) is in memory, lost with a restart anyway, so a batch a restart made
 * the shard forget can be applied again without counting anything twice.
 * The machine and its store are synchronous, so each call's pin reads and writes run
 * with no await between them and the input gate makes each one atomic: two isolates
 * claiming one key at once get one pin.
 */
export class AffinityShard extends DurableObject {
  #machine: ShardMachine;

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    this.#machine = new ShardMachine(new SqlPinStore(ctx.storage.sql));
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(
        "CREATE TABLE IF NOT EXISTS pins (key TEXT NOT NULL, model TEXT NOT NULL, pool TEXT NOT NULL, replica TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (key, model))",
      );
      ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS pins_by_expiry ON pins (expires_at)");
    });
  }

  /** The stored pin if the caller may use it, else the caller's proposal, pinned. */
  async claim(claim: PinClaim): Promise<PinResult> {
    const { pin, alarmBy } = this.#machine.claim(claim, clock.now());
    if (alarmBy !== null) {
      const alarm = await this.ctx.storage.getAlarm();
      if (alarm === null || alarm > alarmBy) await this.ctx.storage.setAlarm(alarmBy);
    }
    return pin;
  }

  /**
   * An isolate's batches: drops after errors, TTL slides, cache hits, each batch applied
   * once; answers the state of every pin the batches touch.
   */
  async sync(request: ShardSync): Promise<ShardSyncResult> {
    return this.#machine.sync(request, clock.now());
  }

  async snapshot(): Promise<ShardSnapshot> {
    return this.#machine.snapshot();
  }

  /** Sweeps pins idle past their TTL, then sleeps until the next expiry. */
  override async alarm(): Promise<void> {
    const { next } = this.#machine.sweep(clock.now());
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }
}

/** The pins table as ShardMachine's store. */
class SqlPinStore implements PinStore {
  constructor(private readonly sql: SqlStorage) {}

  get(key: string, model: string): StoredPin | null {
    const row = this.sql
      .exec<{ pool: string; replica: string; expires_at: number }>("SELECT pool, replica, expires_at FROM pins WHERE key = ? AND model = ?", key, model)
      .toArray()[0];
    return row ? { pool: row.pool, replica: row.replica, expiresAt: row.expires_at } : null;
  }

  put(key: string, model: string, pin: StoredPin): void {
    this.sql.exec("INSERT OR REPLACE INTO pins (key, model, pool, replica, expires_at) VALUES (?, ?, ?, ?, ?)", key, model, pin.pool, pin.replica, pin.expiresAt);
  }

  setExpiry(key: string, model: string, expiresAt: number): void {
    this.sql.exec("UPDATE pins SET expires_at = ? WHERE key = ? AND model = ?", expiresAt, key, model);
  }

  delete(key: string, model: string, replica?: string): boolean {
    const cursor =
      replica === undefined
        ? this.sql.exec("DELETE FROM pins WHERE key = ? AND model = ?", key, model)
        : this.sql.exec("DELETE FROM pins WHERE key = ? AND model = ? AND replica = ?", key, model, replica);
    return cursor.rowsWritten > 0;
  }

  deleteExpired(now: number): Map<string, number> {
    const expired = this.sql.exec<{ model: string; n: number }>("SELECT model, count(*) AS n FROM pins WHERE expires_at <= ? GROUP BY model", now).toArray();
    this.sql.exec("DELETE FROM pins WHERE expires_at <= ?", now);
    return new Map(expired.map(({ model, n }) => [model, n]));
  }

  minExpiry(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM pins").one().at;
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pins").one().n;
  }
}
