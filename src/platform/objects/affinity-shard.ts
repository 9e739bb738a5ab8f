import { DurableObject } from "cloudflare:workers";
import type { AffinityEvent, PinClaim, PinResult, PinTouch, ShardSnapshot, ShardSync, ShardSyncResult } from "../../core/pool/wire";
import { AppliedLedger } from "../../core/state/applied-ledger";
import { refreshGranularityMs } from "../../core/affinity/pins";
import { clock } from "./clock";
import { CounterSet } from "../../lib/counters";

/**
 * One shard of session-affinity pins (`affinity:<n>`, n = key hash mod AFFINITY_SHARDS):
 * (key, model) -> replica with a sliding TTL, the truth every isolate's pin cache
 * follows. An isolate calls it only for a pin it has not cached (`claim`, awaited: a
 * pin created in one isolate is honoured by all) and otherwise in batches off the
 * response path (`sync`: TTL slides, drops after errors, cache hits, revalidation).
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
 * Every method runs storage calls only, so the input gate makes each one atomic: two
 * isolates claiming one key at once get one pin.
 */
export class AffinityShard extends DurableObject {
  #events = new CounterSet();
  #applied = new AppliedLedger();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec(
        "CREATE TABLE IF NOT EXISTS pins (key TEXT NOT NULL, model TEXT NOT NULL, pool TEXT NOT NULL, replica TEXT NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (key, model))",
      );
      ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS pins_by_expiry ON pins (expires_at)");
    });
  }

  /** The stored pin if the caller may use it, else the caller's proposal, pinned. */
  async claim(claim: PinClaim): Promise<PinResult> {
    const now = clock.now();
    if (claim.drop !== null) this.#drop(claim.key, claim.model, claim.drop);
    let pin = this.#readPin(claim.key, claim.model);
    if (pin && pin.expires_at <= now) {
      this.#deletePin(claim.key, claim.model);
      this.#count("expired", claim.model);
      pin = undefined;
    }
    if (pin && pin.pool === claim.pool && claim.allowed.includes(pin.replica)) {
      this.#count("hit", claim.model);
      return { replica: pin.replica, expiresAt: this.#slide(claim.key, claim.model, pin.expires_at, now, claim.ttlMs) };
    }
    // Another pool (the model moved) or a replica this isolate may not use (weight 0,
    // circuit open, removed): the pin is no longer allowed.
    if (pin) this.#count("dropped_unavailable", claim.model);
    else this.#count("miss", claim.model);
    const expiresAt = now + claim.ttlMs;
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO pins (key, model, pool, replica, expires_at) VALUES (?, ?, ?, ?, ?)",
      claim.key,
      claim.model,
      claim.pool,
      claim.proposal,
      expiresAt,
    );
    this.#count("created", claim.model);
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > expiresAt) await this.ctx.storage.setAlarm(expiresAt);
    return { replica: claim.proposal, expiresAt };
  }

  /**
   * An isolate's batches: drops after errors, TTL slides, cache hits, each batch applied
   * once; answers the state of every pin the batches touch (a resent batch's touches are
   * answered as plain reads).
   */
  async sync(request: ShardSync): Promise<ShardSyncResult> {
    const now = clock.now();
    this.#applied.sweep(now);
    const touched = new Map<string, PinTouch>();
    for (const batch of request.batches) for (const t of batch.touches) touched.set(`${t.key}\u0000${t.model}`, { ...t, usedAt: null });
    for (const batch of this.#applied.accept(request.isolate, request.batches, now)) {
      for (const d of batch.drops) this.#drop(d.key, d.model, d.replica);
      for (const [model, n] of Object.entries(batch.hits)) this.#events.add("events", { event: "hit", model }, n);
      for (const t of batch.touches) {
        const slot = `${t.key}\u0000${t.model}`;
        const pin = this.#readPin(t.key, t.model);
        if (t.usedAt !== null && pin && pin.expires_at > now) this.#slide(t.key, t.model, pin.expires_at, Math.min(t.usedAt, now), t.ttlMs);
        touched.set(slot, { ...t, usedAt: null });
      }
    }
    const pins: ShardSyncResult["pins"] = [];
    for (const touch of touched.values()) {
      const pin = this.#readPin(touch.key, touch.model);
      // An expired pin is answered as gone; the sweep counts it as expired.
      pins.push({ key: touch.key, model: touch.model, pin: pin && pin.expires_at > now ? { replica: pin.replica, expiresAt: pin.expires_at } : null });
    }
    return { pins, acked: this.#applied.applied(request.isolate) };
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
    const next = this.ctx.storage.sql.exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM pins").one().at;
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }

  /**
   * Sliding TTL, refreshed coarsely: rewriting the row on every use would cost a write
   * per request, so it is rewritten only once the pin has aged past the granularity.
   */
  #slide(key: string, model: string, expiresAt: number, usedAt: number, ttlMs: number): number {
    const next = usedAt + ttlMs;
    if (next - expiresAt < refreshGranularityMs(ttlMs)) return expiresAt;
    this.ctx.storage.sql.exec("UPDATE pins SET expires_at = ? WHERE key = ? AND model = ?", next, key, model);
    return next;
  }

  /** The pinned replica failed: drop the pin, unless it already points elsewhere. */
  #drop(key: string, model: string, replica: string): void {
    const removed = this.ctx.storage.sql.exec("DELETE FROM pins WHERE key = ? AND model = ? AND replica = ?", key, model, replica).rowsWritten;
    if (removed > 0) this.#count("dropped_error", model);
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
}
