import { clock } from "../../../lib/clock";
import type { Reservation } from "../../../core/limits/ledger";
import { BucketLedger, GRANT_TTL_MS } from "../../../core/limits/ledger";
import { windowIdAt } from "../../../core/limits/windows";
import type { BucketLimits, Dimension, DimensionGrant, LimitAnswer, LimitNews, LimitSnapshot, LimitSync, UsageItem } from "../../../core/limits/wire";
import type { Sealed } from "../../../core/state/batches";
import type { Keeper } from "../sync-loop";
import { waitAtMost } from "../sync-loop";
import { COLD_WAIT_MS, StateClient } from "../state-client";

export const LIMITS_SYNC_MS = 500; // usage reaches the object, and grants are renewed, at most this long after a request while traffic flows

export interface LimitsRpc {
  sync(request: LimitSync): Promise<LimitAnswer>;
  snapshot(): Promise<LimitSnapshot>;
}

type Answer = LimitAnswer & { sentAt: number; exchange: number };

export type Taken = { ok: true; reservation: Reservation } | { ok: false; dim: Dimension; unavailable: boolean };

/**
 * One isolate's share of one limit bucket: the shared-state protocol (../state-client.ts)
 * with settled usage as its batches, and a BucketLedger (src/core/limits/ledger.ts) for
 * the arithmetic. A request reserves from the grant this isolate holds, with no call; only
 * when it does not fit does it wait for an exchange that asked room for it (bounded by
 * COLD_WAIT_MS; requests short at once share them), as a cold isolate's first request does. The grant is refilled
 * in the background while it runs low.
 */
export class LimitAgent extends StateClient<LimitNews, Answer> {
  protected readonly what = "limits_sync";
  readonly ledger: BucketLedger;
  #acquiring: Promise<void> | null = null;
  #answers = 0;
  #failedAt = -Infinity;
  #answeredAt = -Infinity;
  /** The last exchange sent, and the last whose answer was adopted (StateClient numbers them in order). */
  #lastSent = 0;
  #lastAdopted = 0;
  /** The usage items of `unacked`, flattened once per change of it (read several times a request). */
  #unackedItems: { of: readonly Sealed<LimitNews>[]; items: readonly UsageItem[] } | null = null;

  constructor(
    private readonly isolate: () => string,
    readonly bucket: string,
    limits: BucketLimits,
    private readonly rpc: () => LimitsRpc,
  ) {
    super(`limits:${bucket}`, LIMITS_SYNC_MS);
    this.ledger = new BucketLedger(limits);
  }

  update(limits: BucketLimits): void {
    this.ledger.update(limits);
  }

  /** Reserves without waiting; null when it does not fit in what this isolate holds. */
  tryReserve(wants: Partial<Record<Dimension, number>>, keeper: Keeper): Taken {
    const now = clock.now();
    const r = this.ledger.reserve(wants, now, this.#unackedUsage());
    if (!r.ok) return { ok: false, dim: r.dim, unavailable: false };
    // With an exchange already coming, a low grant is refilled by it: no need to work out whether it is low.
    if (!this.exchangePending && this.#low(now)) this.nudge(keeper);
    return r;
  }

  /**
   * Reserves after one bounded wait (COLD_WAIT_MS in all) for the answer to a sync that
   * asked room for this request: the requests that wait at once share the exchanges, and
   * one sent before a request began to wait (without its need) is followed by another.
   */
  async reserveWaiting(wants: Partial<Record<Dimension, number>>, keeper: Keeper, signal?: AbortSignal): Promise<Taken> {
    this.ledger.wait(wants);
    // A client that leaves cancels the handler mid-await, so `finally` may never run: its
    // abort takes the request's need back, or every later sync would still ask room for it.
    let waiting = true;
    const unwait = () => {
      if (!waiting) return;
      waiting = false;
      this.ledger.wait(wants, -1);
    };
    signal?.addEventListener("abort", unwait);
    try {
      const until = Date.now() + COLD_WAIT_MS;
      for (;;) {
        const adopted = this.#lastAdopted;
        await this.#acquire(keeper, this.#lastSent, until);
        const r = this.tryReserve(wants, keeper);
        // An exchange sent just before a window ended is answered with the old window's
        // grant, which no request of the new one can spend: ask again, within the same wait.
        if (r.ok || this.#lastAdopted === adopted || !this.#pastWindow(r.dim) || Date.now() >= until) return r;
      }
    } finally {
      signal?.removeEventListener("abort", unwait);
      unwait();
    }
  }

  async #acquire(keeper: Keeper, after: number, until: number): Promise<void> {
    // An object that failed to answer a wait is not waited for again until it answers: requests
    // are refused at once meanwhile (503), not one in every wait and interval after 2 s, and
    // the loop keeps asking, one sync per interval.
    if (this.#unheard) {
      this.nudge(keeper);
      return;
    }
    while (this.#lastAdopted <= after && Date.now() < until && !this.#unheard) {
      if (!this.#acquiring) {
        const answers = this.#answers;
        const exchange = this.flush();
        keeper.waitUntil(exchange);
        this.#acquiring = waitAtMost(exchange, until - Date.now()).finally(() => {
          this.#acquiring = null;
          if (this.#answers === answers) this.#failedAt = Date.now();
        });
      }
      await this.#acquiring;
    }
  }

  /**
   * The object could not be heard: it never answered this isolate, or the last exchange a
   * request waited for went unanswered (since its last answer). A refusal then says so
   * (503), not that the principal is over a limit it may not be.
   */
  get unreachable(): boolean {
    return !this.hasView || this.#unheard;
  }

  /** The last exchange a request waited for went unanswered, and nothing has been heard since. */
  get #unheard(): boolean {
    return this.#failedAt > this.#answeredAt;
  }

  settle(reservation: Reservation, used: Partial<Record<Dimension, number>>, keeper: Keeper, estimated = false): void {
    this.ledger.settle(reservation, used, estimated);
    this.nudge(keeper);
  }

  /** A request refused by this bucket: counted by the object with the next report (for /metrics). */
  refused(dim: Dimension, keeper: Keeper): void {
    this.ledger.refused(dim);
    this.nudge(keeper);
  }

  release(reservation: Reservation): void {
    this.ledger.settle(reservation, {});
  }

  /**
   * A dimension as last heard, with this isolate's own spendable part: for the x-ratelimit
   * headers. That part is negative when answers here used more than their reservations and
   * the grant held (usage beyond a reservation is charged all the same): it comes out of
   * what the object had free.
   */
  standing(dim: Dimension): { grant: DimensionGrant; remaining: number } | null {
    const grant = this.view?.dims[dim];
    if (!grant) return null;
    const own = this.ledger.available(dim, clock.now(), this.#unackedUsage());
    return { grant, remaining: Math.max(0, grant.free + own) };
  }

  /**
   * What this bucket has used of `dim` in the current window as far as this isolate knows:
   * the object's count at its last answer plus this isolate's use settled since. Null: no
   * answer for this window yet.
   */
  used(dim: Dimension): number | null {
    const held = this.#heldNow(dim);
    if (!held || held.grant.window !== held.window) return null;
    return held.grant.spent + this.ledger.unreported(dim, held.window, this.#unackedUsage());
  }

  /** The grant held for `dim` is of a window that has ended. */
  #pastWindow(dim: Dimension): boolean {
    const held = this.#heldNow(dim);
    return held !== null && held.grant.window !== held.window;
  }

  /** The grant last heard for `dim`, and the window now falls in; null when `dim` has no limit or no grant yet. */
  #heldNow(dim: Dimension): { grant: DimensionGrant; window: number } | null {
    const grant = this.view?.dims[dim];
    const limit = this.ledger.limits[dim];
    return grant && limit ? { grant, window: windowIdAt(limit.window, clock.now(), limit.resetAt) } : null;
  }

  /** Spendable grant under half a refill: the next sync should come soon. */
  #low(now: number): boolean {
    const hold = this.ledger.hold(now);
    for (const [dim, wanted] of Object.entries(hold) as [Dimension, number][]) {
      const inFlight = this.ledger.reservedOf(dim, now);
      if (this.ledger.available(dim, now, this.#unackedUsage()) < (wanted - inFlight) / 2) return true;
    }
    return false;
  }

  #unackedUsage(): readonly UsageItem[] {
    const batches = this.unacked;
    if (this.#unackedItems?.of !== batches) this.#unackedItems = { of: batches, items: batches.flatMap((b) => b.usage) };
    return this.#unackedItems.items;
  }

  protected drain(): LimitNews | null {
    return this.ledger.drain();
  }

  protected async send(batches: Sealed<LimitNews>[], exchange: number): Promise<Answer> {
    const sentAt = clock.now();
    this.#lastSent = exchange;
    const answer = await this.rpc().sync({ isolate: this.isolate(), limits: this.ledger.limits, hold: this.ledger.hold(sentAt), ttlMs: GRANT_TTL_MS, batches });
    return { ...answer, sentAt, exchange };
  }

  protected override adopt(view: Answer): void {
    this.#answers++;
    this.#lastAdopted = view.exchange;
    this.#answeredAt = Date.now();
    this.view = view;
    this.ledger.adopt(view, view.sentAt, GRANT_TTL_MS);
  }
}
