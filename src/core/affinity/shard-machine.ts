import { CounterSet } from "../../lib/counters";
import { AppliedLedger } from "../state/applied-ledger";
import { pinSlot, refreshGranularityMs } from "./pins";
import type { AffinityEvent, PinClaim, PinResult, PinTouch, ShardSnapshot, ShardSync, ShardSyncResult } from "./wire";

/** One stored pin of a (key, model). */
export interface StoredPin {
  pool: string;
  replica: string;
  /** Epoch ms the pin expires unless used again. */
  expiresAt: number;
}

/**
 * Where a shard's pins are kept: the object implements it with SQL
 * (src/platform/objects/affinity-shard.ts). Synchronous, so that one call of the machine
 * runs without a gap another call could enter.
 */
export interface PinStore {
  get(key: string, model: string): StoredPin | null;
  /** Stores a pin, replacing the one the (key, model) had. */
  put(key: string, model: string, pin: StoredPin): void;
  /** Moves a stored pin's expiry. */
  setExpiry(key: string, model: string, expiresAt: number): void;
  /** Deletes the (key, model)'s pin; with `replica`, only if it points there. Whether a pin was deleted. */
  delete(key: string, model: string, replica?: string): boolean;
  /** Deletes every pin expiring at or before `now`; how many went, per model. */
  deleteExpired(now: number): Map<string, number>;
  /** The earliest expiry of any stored pin, or null when there is none. */
  minExpiry(): number | null;
  count(): number;
}

/**
 * One affinity shard as a pure machine over its PinStore: the claim rules (honour a
 * usable pin, else pin the caller's proposal), drops after errors, the coarse sliding
 * TTL, the expiry sweep, the event counters, and which batches of each isolate were
 * applied. Time is an argument. The ledger and the counters are memory only: a batch's
 * stored effects (slides, drops) are idempotent, and its counted effect (cache hits) is
 * lost with a restart anyway, so a batch a restart made the shard forget can be applied
 * again without counting anything twice.
 */
export class ShardMachine {
  #events = new CounterSet();
  #applied = new AppliedLedger();

  constructor(private readonly store: PinStore) {}

  /**
   * The stored pin if the caller may use it, else the caller's proposal, pinned.
   * `alarmBy`: a pin was created that expires then; the shard's alarm must fire no later.
   */
  claim(claim: PinClaim, now: number): { pin: PinResult; alarmBy: number | null } {
    if (claim.drop !== null) this.#drop(claim.key, claim.model, claim.drop);
    let pin = this.store.get(claim.key, claim.model);
    if (pin && pin.expiresAt <= now) {
      this.store.delete(claim.key, claim.model);
      this.#count("expired", claim.model);
      pin = null;
    }
    if (pin && pin.pool === claim.pool && claim.allowed.includes(pin.replica)) {
      this.#count("hit", claim.model);
      return { pin: { replica: pin.replica, expiresAt: this.#slide(claim.key, claim.model, pin.expiresAt, now, claim.ttlMs) }, alarmBy: null };
    }
    // Another pool (the model moved) or a replica this isolate may not use (weight 0,
    // circuit open, removed): the pin is no longer allowed.
    this.#count(pin ? "dropped_unavailable" : "miss", claim.model);
    const expiresAt = now + claim.ttlMs;
    this.store.put(claim.key, claim.model, { pool: claim.pool, replica: claim.proposal, expiresAt });
    this.#count("created", claim.model);
    return { pin: { replica: claim.proposal, expiresAt }, alarmBy: expiresAt };
  }

  /**
   * An isolate's batches: drops after errors, TTL slides, cache hits, each batch applied
   * once; answers the state of every pin the batches touch (a resent batch's touches are
   * answered as plain reads).
   */
  sync(request: ShardSync, now: number): ShardSyncResult {
    this.#applied.sweep(now);
    const touched = new Map<string, PinTouch>();
    for (const batch of request.batches) for (const t of batch.touches) touched.set(pinSlot(t.key, t.model), { ...t, usedAt: null });
    for (const batch of this.#applied.accept(request.isolate, request.batches, now)) {
      for (const d of batch.drops) this.#drop(d.key, d.model, d.replica);
      for (const [model, n] of Object.entries(batch.hits)) this.#events.add("events", { event: "hit", model }, n);
      for (const t of batch.touches) {
        const pin = this.store.get(t.key, t.model);
        if (t.usedAt !== null && pin && pin.expiresAt > now) this.#slide(t.key, t.model, pin.expiresAt, Math.min(t.usedAt, now), t.ttlMs);
        touched.set(pinSlot(t.key, t.model), { ...t, usedAt: null });
      }
    }
    const pins: ShardSyncResult["pins"] = [];
    for (const touch of touched.values()) {
      const pin = this.store.get(touch.key, touch.model);
      // An expired pin is answered as gone; the sweep counts it as expired.
      pins.push({ key: touch.key, model: touch.model, pin: pin && pin.expiresAt > now ? { replica: pin.replica, expiresAt: pin.expiresAt } : null });
    }
    return { pins, acked: this.#applied.applied(request.isolate) };
  }

  /** Deletes pins idle past their TTL, counting them as expired; `next` is the next expiry (null: none left). */
  sweep(now: number): { next: number | null } {
    for (const [model, n] of this.store.deleteExpired(now)) this.#events.add("events", { event: "expired", model }, n);
    return { next: this.store.minExpiry() };
  }

  snapshot(): ShardSnapshot {
    return { events: this.#events.samples("events"), pins: this.store.count() };
  }

  /**
   * Sliding TTL, refreshed coarsely: rewriting the pin on every use would cost a write
   * per request, so it is rewritten only once it has aged past the granularity.
   */
  #slide(key: string, model: string, expiresAt: number, usedAt: number, ttlMs: number): number {
    const next = usedAt + ttlMs;
    if (next - expiresAt < refreshGranularityMs(ttlMs)) return expiresAt;
    this.store.setExpiry(key, model, next);
    return next;
  }

  /** The pinned replica failed: drop the pin, unless it already points elsewhere. */
  #drop(key: string, model: string, replica: string): void {
    if (this.store.delete(key, model, replica)) this.#count("dropped_error", model);
  }

  #count(event: AffinityEvent, model: string): void {
    this.#events.add("events", { event, model });
  }
}
