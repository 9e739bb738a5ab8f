import { windowIdAt } from "./windows";
import type { BucketLimits, Dimension, LimitAnswer, LimitNews, UsageItem } from "./wire";
import { DIMENSIONS } from "./wire";

export const GRANT_TTL_MS = 10_000; // a grant outlives ten syncs' worth of a slow object, yet a vanished isolate's allowance returns within seconds
export const GRANT_MARGIN_MS = 1_000; // the isolate stops spending a grant this long before the object could give it to another
export const REFILL_MIN_SHARE = 0.01; // a busy isolate holds at least 1% of a limit beyond its reservations, so the next requests need no call
export const REFILL_MAX_SHARE = 0.05; // and at most 5%: what a busy isolate can keep from the others (the early-refusal bound)
export const CONCURRENCY_HEADROOM = 0.5; // a busy isolate holds half again its recent peak in flight (within REFILL_MAX_SHARE), so a peak a little higher needs no call
const DEMAND_TICK_MS = 1_000; // refills follow the last second's reservations
const IDLE_MS = 2_000; // an isolate with no reservation this long holds only what its requests in flight need

/** What a request holds of one bucket until it settles: per dimension, the amount and the window it came from. */
export interface Reservation {
  amounts: Partial<Record<Dimension, { amount: number; window: number }>>;
}

export type Reserved = { ok: true; reservation: Reservation } | { ok: false; dim: Dimension };

/**
 * One isolate's side of one limit bucket, pure: the grant the object last answered, less
 * what this isolate has reserved for requests in flight and settled since the object last
 * acknowledged (usage the object has not counted yet), is what it may still spend without
 * asking. A request reserves its predicted use from that before it is sent; a reservation
 * that does not fit in every dimension takes nothing. A grant is spent only while it is
 * surely still held: until GRANT_MARGIN_MS before its ttl (timed from when the sync left,
 * which is no later than the object's own count) and within its window.
 */
export class BucketLedger {
  #limits: BucketLimits;
  #answer: LimitAnswer | null = null;
  #validUntil = -Infinity;
  /** In flight, by dimension and window ({@link key}). */
  #reserved = new Map<number, number>();
  /** Settled use not yet sent, summed by dimension and window: a report stays a few items however many requests it covers. */
  #pending = new Map<number, UsageItem>();
  #refusals: Partial<Record<Dimension, number>> = {};
  #estimatedTokens = 0;
  #need: Partial<Record<Dimension, number>> = {};
  #demand = new Map<Dimension, { tick: number; current: number; previous: number }>();
  #lastReservedAt = -Infinity;

  constructor(limits: BucketLimits) {
    this.#limits = limits;
  }

  update(limits: BucketLimits): void {
    this.#limits = limits;
  }

  get limits(): BucketLimits {
    return this.#limits;
  }

  get answer(): LimitAnswer | null {
    return this.#answer;
  }

  /** The object's answer to a sync that left at `sentAt` (the domain clock). */
  adopt(answer: LimitAnswer, sentAt: number, ttlMs = GRANT_TTL_MS): void {
    this.#answer = answer;
    this.#validUntil = sentAt + ttlMs - GRANT_MARGIN_MS;
  }

  /**
   * Requests waiting for a grant that can hold them (told by each one as it starts to wait,
   * and untold once it has reserved or given up): the next sync asks room for all of them.
   */
  wait(wants: Partial<Record<Dimension, number>>, sign: 1 | -1 = 1): void {
    for (const dim of DIMENSIONS) {
      const want = wants[dim];
      if (!this.#limits[dim] || !(want !== undefined && want > 0)) continue;
      const need = (this.#need[dim] ?? 0) + sign * want;
      if (need > 1e-9) this.#need[dim] = need;
      else delete this.#need[dim];
    }
  }

  /** What this isolate may still spend of `dim` now, given usage sent but not yet acknowledged. */
  available(dim: Dimension, now: number, unacked: readonly UsageItem[]): number {
    const limit = this.#limits[dim];
    return limit ? this.#availableIn(dim, windowIdAt(limit.window, now, limit.resetAt), now, unacked) : 0;
  }

  /** `available` in the window `now` falls in, worked out once by the caller. */
  #availableIn(dim: Dimension, window: number, now: number, unacked: readonly UsageItem[]): number {
    const grant = this.#answer?.dims[dim];
    const limit = this.#limits[dim];
    if (!grant || !limit || now >= this.#validUntil) return 0;
    if (grant.window !== window || grant.total !== limit.total) return 0; // a new window or a changed limit: a fresh grant first
    let uncounted = this.#reserved.get(key(dim, window)) ?? 0;
    for (const item of unacked) if (item.dim === dim && item.window === window) uncounted += item.amount;
    uncounted += this.#pending.get(key(dim, window))?.amount ?? 0;
    return grant.granted - uncounted;
  }

  /** Reserves `wants` in every limited dimension, or nothing: the first dimension that cannot hold it is named. */
  reserve(wants: Partial<Record<Dimension, number>>, now: number, unacked: readonly UsageItem[]): Reserved {
    // Per request, on every limited request's path: plain loops over DIMENSIONS and numeric
    // keys, no entries arrays or key strings (bench/README.md, the limits row).
    const amounts: Reservation["amounts"] = {};
    this.#lastReservedAt = now; // a refused request is demand too
    for (const dim of DIMENSIONS) {
      const limit = this.#limits[dim];
      if (!limit) continue;
      const want = wants[dim] ?? 0;
      const window = windowIdAt(limit.window, now, limit.resetAt);
      if (want > this.#availableIn(dim, window, now, unacked)) return { ok: false, dim };
      amounts[dim] = { amount: want, window };
    }
    for (const dim of DIMENSIONS) {
      const r = amounts[dim];
      if (!r) continue;
      const k = key(dim, r.window);
      const inFlight = (this.#reserved.get(k) ?? 0) + r.amount;
      this.#reserved.set(k, inFlight);
      // Concurrency's demand is its peak in flight; the others' is what was reserved.
      this.#noteDemand(dim, dim === "concurrent" ? inFlight : r.amount, now, dim === "concurrent");
    }
    return { ok: true, reservation: { amounts } };
  }

  /**
   * A request's reservation given back and what it used recorded, to be reported with the
   * next sync against the window it was reserved in. Concurrency is only given back.
   */
  settle(reservation: Reservation, used: Partial<Record<Dimension, number>>, estimated = false): void {
    if (estimated && (used.tokens ?? 0) > 0) this.#estimatedTokens += used.tokens!;
    for (const dim of DIMENSIONS) {
      const r = reservation.amounts[dim];
      if (r) {
        const k = key(dim, r.window);
        const left = (this.#reserved.get(k) ?? 0) - r.amount;
        if (left > 1e-9) this.#reserved.set(k, left);
        else this.#reserved.delete(k);
      }
      // Use of a dimension this bucket does not limit is reported too (window 0, which no
      // limit counts): the object's counters for /metrics take it.
      const amount = used[dim];
      if (dim === "concurrent" || amount === undefined || !(amount > 0)) continue;
      const window = r?.window ?? UNLIMITED_WINDOW;
      const k = key(dim, window);
      const item = this.#pending.get(k);
      if (item) item.amount += amount;
      else this.#pending.set(k, { dim, window, amount });
    }
  }

  /** A request refused here by `dim`, to be counted by the object with the next report. */
  refused(dim: Dimension): void {
    this.#refusals[dim] = (this.#refusals[dim] ?? 0) + 1;
  }

  /** Usage to report, once; null when there is none. */
  drain(): LimitNews | null {
    const refused = Object.keys(this.#refusals).length > 0;
    if (this.#pending.size === 0 && !refused) return null;
    const news: LimitNews = { usage: [...this.#pending.values()] };
    this.#pending = new Map();
    if (this.#estimatedTokens > 0) news.estimatedTokens = this.#estimatedTokens;
    this.#estimatedTokens = 0;
    if (refused) news.refusals = this.#refusals;
    this.#refusals = {};
    return news;
  }

  /**
   * The grant to ask for, per dimension: what requests in flight hold, what the waiting
   * ones need, and a refill of about the last second's reservations (REFILL_MIN_SHARE to
   * REFILL_MAX_SHARE of the limit) while requests come; for concurrency, the recent peak in
   * flight and CONCURRENCY_HEADROOM of it. Once idle, only what is in flight.
   */
  hold(now: number): Partial<Record<Dimension, number>> {
    const hold: Partial<Record<Dimension, number>> = {};
    const idle = now - this.#lastReservedAt > IDLE_MS;
    for (const dim of DIMENSIONS) {
      const limit = this.#limits[dim];
      if (!limit) continue;
      const window = windowIdAt(limit.window, now, limit.resetAt);
      const inFlight = this.#reserved.get(key(dim, window)) ?? 0;
      const need = this.#need[dim] ?? 0;
      const demand = idle ? 0 : this.#recentDemand(dim, now);
      const integral = dim === "requests";
      if (dim === "concurrent") {
        const headroom = Math.min(Math.ceil(demand * CONCURRENCY_HEADROOM), Math.floor(limit.total * REFILL_MAX_SHARE));
        hold[dim] = Math.max(inFlight + need, demand + headroom);
        continue;
      }
      const refill = idle ? 0 : Math.min(Math.max(demand, limit.total * REFILL_MIN_SHARE), limit.total * REFILL_MAX_SHARE);
      const wanted = inFlight + need + refill;
      hold[dim] = integral ? Math.ceil(wanted) : wanted;
    }
    return hold;
  }

  /** Use of `dim` settled here in `window` that the object has not counted yet: sent unacknowledged, or not sent. */
  unreported(dim: Dimension, window: number, unacked: readonly UsageItem[]): number {
    let sum = 0;
    for (const item of unacked) if (item.dim === dim && item.window === window) sum += item.amount;
    return sum + (this.#pending.get(key(dim, window))?.amount ?? 0);
  }

  /** Requests in flight here, and what they hold (for views and tests). */
  reservedOf(dim: Dimension, now: number): number {
    const limit = this.#limits[dim];
    return limit ? (this.#reserved.get(key(dim, windowIdAt(limit.window, now, limit.resetAt))) ?? 0) : 0;
  }

  #noteDemand(dim: Dimension, amount: number, now: number, peak: boolean): void {
    const tick = Math.floor(now / DEMAND_TICK_MS);
    const d = this.#demand.get(dim);
    if (!d || d.tick < tick - 1) this.#demand.set(dim, { tick, current: amount, previous: 0 });
    else if (d.tick === tick - 1) this.#demand.set(dim, { tick, current: amount, previous: d.current });
    else d.current = peak ? Math.max(d.current, amount) : d.current + amount;
  }

  #recentDemand(dim: Dimension, now: number): number {
    const d = this.#demand.get(dim);
    if (!d) return 0;
    const tick = Math.floor(now / DEMAND_TICK_MS);
    if (d.tick === tick) return Math.max(d.current, d.previous);
    if (d.tick === tick - 1) return d.current;
    return 0;
  }
}

const UNLIMITED_WINDOW = -1; // no window id windowAt gives, so the object counts such use in no limit

const DIMENSION_INDEX: Record<Dimension, number> = { requests: 0, tokens: 1, spend: 2, concurrent: 3 };

/** A map key for a dimension in a window: a number, so no string is built per request (window ids are integers ≥ UNLIMITED_WINDOW). */
const key = (dim: Dimension, window: number): number => window * DIMENSIONS.length + DIMENSION_INDEX[dim];
