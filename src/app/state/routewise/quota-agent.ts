import type { QuotaView } from "../../../core/routewise/types";
import type { Sealed } from "../../../core/state/batches";
import type { QuotaRpc } from "./stubs";
import type { QuotaAnswer, QuotaNews, QuotaSpec, QuotaState } from "../../../core/routewise/wire";
import { StateClient } from "../state-client";
import { ROUTEWISE_SYNC_MS } from "./sync-interval";

/**
 * One isolate's view of one quota: the shared-state protocol (./state-client.ts) with the
 * units used as payload. What the object last said was left, less what this isolate has
 * used since (counted at once, so one isolate never spends past what it was told). Other
 * isolates' use shows within one sync; the bound on overshoot is what the others spend
 * in that time, which is also what the provider's own usage API lags by.
 */
export class QuotaAgent extends StateClient<QuotaNews, QuotaAnswer> {
  protected readonly what = "quota_sync";
  #spec: QuotaSpec;
  #pending = 0;
  #short = false;
  /** Units held by this isolate's requests in flight: their predicted use, until their real use is known. */
  #reserved = 0;

  constructor(
    private readonly isolate: () => string,
    spec: QuotaSpec,
    private readonly rpc: () => QuotaRpc,
    now?: () => number,
  ) {
    super(`quota:${spec.id}`, ROUTEWISE_SYNC_MS, now);
    this.#spec = spec;
  }

  update(spec: QuotaSpec): void {
    this.#spec = spec;
  }

  get spec(): QuotaSpec {
    return this.#spec;
  }

  /** Units this isolate's requests in flight hold now (for /routing). */
  get reserved(): number {
    return this.#reserved;
  }

  /** The quota as a decision reads it now. Without any answer yet it counts as exhausted (fail safe). */
  quota(now: number): QuotaView {
    const s = this.view;
    if (!s) return { remaining: 0, limit: this.#spec.limit, unit: this.#spec.unit, resetInMs: null, failSafe: "never_polled" };
    // The answer counts every batch it acknowledged; batches still unacknowledged, and what is not batched yet, come off it here.
    const notCounted = this.unacked.reduce((n, b) => n + b.used, 0) + this.#pending;
    return {
      remaining: Math.max(0, s.remaining - notCounted - this.#reserved),
      limit: s.limit,
      unit: s.unit,
      resetInMs: s.resetAt === null ? null : Math.max(0, s.resetAt - now),
      failSafe: s.failSafe,
    };
  }

  /** The object's full state as last heard (for /routing). */
  get state(): QuotaState | null {
    return this.view;
  }

  /** Holds units for a request about to be sent, so requests deciding meanwhile see them gone. */
  reserve(units: number): void {
    this.#reserved += Math.max(0, units);
  }

  /** A request's reservation given back, and what it really used counted. */
  settle(reserved: number, used: number): void {
    this.#reserved = Math.max(0, this.#reserved - reserved);
    this.used(used);
  }

  used(units: number): void {
    if (!(units > 0)) return;
    this.#pending += units;
  }

  /** A request found too few units left: told to the object with the next sync (an exhaustion event). */
  short(): void {
    this.#short = true;
  }

  protected drain(): QuotaNews | null {
    if (this.#pending === 0 && !this.#short) return null;
    const news: QuotaNews = { used: this.#pending, ...(this.#short && { short: true }) };
    this.#pending = 0;
    this.#short = false;
    return news;
  }

  protected send(batches: Sealed<QuotaNews>[]): Promise<QuotaAnswer> {
    return this.rpc().sync({ isolate: this.isolate(), spec: this.#spec, batches });
  }
}
