import type { QuotaView } from "../../../core/routewise/types";
import type { QuotaRpc } from "./stubs";
import type { QuotaSpec, QuotaState } from "../../../core/routewise/wire";
import { ViewAgent } from "./view-agent";

/**
 * One isolate's view of one quota: what its object last said was left, less what this
 * isolate has used since (counted at once, so one isolate never spends past what it was
 * told). Other isolates' use shows within one sync; the bound on overshoot is what the
 * others spend in that time, which is also what the provider's own usage API lags by.
 */
export class QuotaAgent extends ViewAgent<QuotaState> {
  protected readonly what = "quota_sync";
  #spec: QuotaSpec;
  #pending = 0;
  #sinceView = 0;
  #short = false;
  /** Units held by this isolate's requests in flight: their predicted use, until their real use is known. */
  #reserved = 0;

  constructor(spec: QuotaSpec, private readonly rpc: () => QuotaRpc, now?: () => number) {
    super(now);
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
    return {
      remaining: Math.max(0, s.remaining - this.#sinceView - this.#reserved),
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
    this.#sinceView += units;
  }

  /** A request found too few units left: told to the object with the next sync (an exhaustion event). */
  short(): void {
    this.#short = true;
  }

  protected async exchange(): Promise<QuotaState> {
    const used = this.#pending;
    const short = this.#short;
    this.#pending = 0;
    this.#short = false;
    try {
      return await this.rpc().sync({ spec: this.#spec, used, ...(short && { short }) });
    } catch (error) {
      this.#pending += used;
      this.#short ||= short;
      throw error;
    }
  }

  protected override adopt(view: QuotaState): void {
    // The answer counts everything sent with it; what was used while it travelled is still pending.
    this.view = view;
    this.#sinceView = this.#pending;
  }
}
