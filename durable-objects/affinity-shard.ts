import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";
import type { AffinityEvent, ShardFinishReport, ShardRouteRequest, ShardRouteResult, ShardSnapshot } from "../src/state/types";
import { clock } from "./clock";
import { CounterSet } from "./counters";

/**
 * One shard of session-affinity pins (`affinity:<n>`, n = key hash mod AFFINITY_SHARDS):
 * (key, model) -> replica with a sliding TTL. The shard is the request's single round
 * trip: it reads the pin, asks the pool's object to check circuits, choose and lease
 * (pin first), and records what became of the pin.
 *
 * Storage schema (SQLite):
 *   pins(key TEXT, model TEXT, pool TEXT, replica TEXT, expires_at INTEGER,
 *        PRIMARY KEY (key, model))             -- key is a SHA-256 hex or "ip:<address>"
 *   pins_by_expiry index on expires_at         -- the alarm sweep and its next wake-up
 * One alarm per shard, set to the earliest expiry; it deletes expired pins and counts
 * them as `expired`. Event counters live in memory (a restart reads as a counter reset).
 */
export class AffinityShard extends DurableObject<Env> {
  #events = new CounterSet();
  /** Misses in progress: concurrent first requests for one (key, model) share one pin. */
  #creating = new Map<string, Promise<unknown>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(
        "CREATE TABLE IF NOT EXISTS pins (key TEXT NOT NULL, model TEXT NOT NULL, pool TEXT NOT NULL, replica TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (key, model))",
      );
      ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS pins_by_expiry ON pins (expires_at)");
    });
  }

  async route(request: ShardRouteRequest): Promise<ShardRouteResult> {
    const slot = `${request.key}\u0000${request.model}`;
    for (;;) {
      const pending = this.#creating.get(slot);
      if (!pending) break;
      await pending.catch(() => {});
    }

    const now = clock.now();
    let pin = this.#readPin(request.key, request.model);
    if (pin && pin.expires_at <= now) {
      this.#deletePin(request.key, request.model);
      this.#count("expired", request.model);
      pin = undefined;
    }
    if (pin && pin.pool !== request.pool) {
      // The model now routes to another pool: its pinned replica is no longer allowed.
      this.#deletePin(request.key, request.model);
      this.#count("dropped_unavailable", request.model);
      return this.#acquireAndPin(request, null);
    }

    if (!pin) {
      this.#count("miss", request.model);
      const creating = this.#acquireAndPin(request, null);
      this.#creating.set(slot, creating);
      try {
        return await creating;
      } finally {
        this.#creating.delete(slot);
      }
    }

    const result = await this.#pool(request.pool).acquire({ ...request.acquire, pinned: pin.replica });
    if (result.pinnedAllowed) {
      this.#count("hit", request.model);
      this.#refresh(request, pin.expires_at);
      return { ...result, pinned: pin.replica };
    }
    this.#deletePin(request.key, request.model);
    this.#count("dropped_unavailable", request.model);
    return this.#pinFirst(request, result);
  }

  /** Release and outcome for the pool, and the pin dropped if its replica failed. */
  async finish(report: ShardFinishReport): Promise<void> {
    if (report.dropPinOf !== null) {
      const removed = this.ctx.storage.sql.exec(
        "DELETE FROM pins WHERE key = ? AND model = ? AND replica = ?",
        report.key,
        report.model,
        report.dropPinOf,
      ).rowsWritten;
      if (removed > 0) this.#count("dropped_error", report.model);
    }
    await this.#pool(report.pool).finish(report.finish);
  }

  async snapshot(): Promise<ShardSnapshot> {
    const pins = this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pins").one().n;
    return { events: this.#events.samples("events"), pins };
  }

  /** Sweeps pins idle past their TTL, then sleeps until the next expiry. */
  override async alarm(): Promise<void> {
    const now = clock.now();
    const expired = this.ctx.storage.sql
      .exec<{ model: string; n: number }>("SELECT model, count(*) AS n FROM pins WHERE expires_at <= ? GROUP BY model", now)
      .toArray();
    this.ctx.storage.sql.exec("DELETE FROM pins WHERE expires_at <= ?", now);
    for (const { model, n } of expired) this.#events.add("events", { event: "expired", model }, n);
    await this.#armSweep();
  }

  async #acquireAndPin(request: ShardRouteRequest, pinned: string | null): Promise<ShardRouteResult> {
    const result = await this.#pool(request.pool).acquire({ ...request.acquire, pinned });
    return this.#pinFirst(request, result);
  }

  /** A fresh pin on the first choice, unless the pool routed fail-open (no real choice). */
  async #pinFirst(request: ShardRouteRequest, result: Omit<ShardRouteResult, "pinned">): Promise<ShardRouteResult> {
    const first = result.order[0];
    if (first === undefined || result.failedOpen) return { ...result, pinned: null };
    const expiresAt = clock.now() + request.ttlMs;
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO pins (key, model, pool, replica, expires_at) VALUES (?, ?, ?, ?, ?)",
      request.key,
      request.model,
      request.pool,
      first,
      expiresAt,
    );
    this.#count("created", request.model);
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > expiresAt) await this.ctx.storage.setAlarm(expiresAt);
    return { ...result, pinned: first };
  }

  /**
   * Sliding TTL, refreshed coarsely: rewriting the row on every hit would cost a write
   * per request, so it is rewritten only once the pin has aged past the granularity.
   */
  #refresh(request: ShardRouteRequest, expiresAt: number): void {
    const now = clock.now();
    const granularity = Math.min(TTL_REFRESH_GRANULARITY_MS, request.ttlMs / 10);
    if (now + request.ttlMs - expiresAt < granularity) return;
    this.ctx.storage.sql.exec("UPDATE pins SET expires_at = ? WHERE key = ? AND model = ?", now + request.ttlMs, request.key, request.model);
  }

  async #armSweep(): Promise<void> {
    const next = this.ctx.storage.sql.exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM pins").one().at;
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }

  #readPin(key: string, model: string) {
    return this.ctx.storage.sql
      .exec<{ pool: string; replica: string; expires_at: number }>("SELECT pool, replica, expires_at FROM pins WHERE key = ? AND model = ?", key, model)
      .toArray()[0];
  }

  #deletePin(key: string, model: string): void {
    this.ctx.storage.sql.exec("DELETE FROM pins WHERE key = ? AND model = ?", key, model);
  }

  #count(event: AffinityEvent, model: string): void {
    this.#events.add("events", { event, model });
  }

  #pool(pool: string) {
    return this.env.POOL_STATE.getByName(poolObjectName(pool));
  }
}

const TTL_REFRESH_GRANULARITY_MS = 30_000; // at most one pin write per 30 s per active session (or TTL/10 if shorter)

export const poolObjectName = (pool: string): string => `pool:${pool}`;
