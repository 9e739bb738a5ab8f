import { DurableObject } from "cloudflare:workers";
import { compilePath, get } from "../../lib/gjson";
import type { QuotaAnswer, QuotaSpec, QuotaState, QuotaSync } from "../../core/routewise/wire";
import { AppliedLedger } from "../../core/state/applied-ledger";
import { clock } from "./clock";

type Polled = { used: number; limit: number; resetAt: number | null; at: number };

/**
 * One provider quota (`quota:<quota_pool or model/route>`), shared by every route that
 * draws on the subscription. The provider's usage API is the truth: it is polled on an
 * alarm every `poll_s`; between polls, the units isolates report using are taken off what
 * the last poll left, so routes in one pool decrement it together. It fails safe: until
 * the first good poll, and once the last good one is older than `stale_after_s`, the
 * quota counts as exhausted.
 *
 * Storage (KV API of the SQLite backend):
 *   "spec"    QuotaSpec of the newest config, for the alarm, with the usage API's credential
 *             replaced by a marker: credentials are never at rest here. After a restart the
 *             alarm waits for the next sync (a request, or the cron within a minute) to bring it.
 *   "polled"  {used, limit, resetAt, at} of the last good poll
 *   "since"   {units, window}: units reported by isolates since that poll, and the reset
 *             ending the window they were used in (past it they no longer count)
 *   "applied:<isolate>"  {seq, at}: the isolate's highest batch seq applied
 *             (src/core/state/applied-ledger.ts), put in the same call as "since", so a
 *             batch whose answer was lost, resent before or after a restart, is taken off
 *             the quota once; deleted once the isolate has been silent APPLIED_TTL_MS
 * Memory only: lastError, exhaustion counts (Prometheus reads a restart as a reset).
 */
export class ProviderQuota extends DurableObject {
  #spec: QuotaSpec | null = null;
  #polled: Polled | null = null;
  #since = 0;
  /** The reset ending the window `#since` was reported in. */
  #sinceWindow: number | null = null;
  #lastError: string | null = null;
  #polling: Promise<void> | null = null;
  /** Why the quota is exhausted now (null: usable); an event is counted when it becomes non-null. */
  #exhausted: "used_up" | "fail_safe" | null = null;
  /** Remaining units when an isolate last found them too few for a request; cleared when a poll shows more. */
  #shortAt: number | null = null;
  #exhaustions = { used_up: 0, fail_safe: 0 };
  #applied = new AppliedLedger();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      this.#spec = (await ctx.storage.get<QuotaSpec>("spec")) ?? null;
      this.#polled = (await ctx.storage.get<Polled>("polled")) ?? null;
      const since = await ctx.storage.get<{ units: number; window: number | null }>("since");
      if (since) [this.#since, this.#sinceWindow] = [since.units, since.window];
      for (const [key, applied] of await ctx.storage.list<{ seq: number; at: number }>({ prefix: APPLIED_PREFIX })) {
        this.#applied.restore(key.slice(APPLIED_PREFIX.length), applied.seq, applied.at);
      }
    });
  }

  /** An isolate's batches of usage in, each applied once; the quota as it stands out. The first call for a new spec polls at once. */
  async sync(request: QuotaSync): Promise<QuotaAnswer> {
    await this.#adopt(request.spec);
    const now = clock.now();
    const forgotten = this.#applied.sweep(now);
    if (forgotten.length > 0) await this.ctx.storage.delete(forgotten.map((isolate) => APPLIED_PREFIX + isolate));
    let used = 0;
    let short = false;
    for (const batch of this.#applied.accept(request.isolate, request.batches, now)) {
      if (Number.isFinite(batch.used) && batch.used > 0) used += batch.used;
      short ||= batch.short === true;
    }
    if (used > 0) {
      this.#turnWindow(now);
      this.#since += used;
      // One put, so the units and the record of the batches they came from are stored together.
      await this.ctx.storage.put({ since: { units: this.#since, window: this.#sinceWindow }, [APPLIED_PREFIX + request.isolate]: { seq: this.#applied.applied(request.isolate), at: now } });
    }
    if (short && this.#shortAt === null) this.#shortAt = this.#state(now).remaining;
    return { ...this.#state(now), acked: this.#applied.applied(request.isolate) };
  }

  /** The quota's terms, told without a request: when a config is published or on the Worker's cron, so it polls before traffic comes. */
  async adopt(spec: QuotaSpec): Promise<QuotaState> {
    await this.#adopt(spec);
    return this.#state(clock.now());
  }

  async snapshot(): Promise<QuotaState> {
    return this.#state(clock.now());
  }

  override async alarm(): Promise<void> {
    if (!this.#spec) return;
    await this.#poll();
    await this.ctx.storage.setAlarm(Date.now() + this.#spec.source.poll_s * 1000);
  }

  async #adopt(spec: QuotaSpec): Promise<void> {
    const changed = JSON.stringify(spec) !== JSON.stringify(this.#spec);
    if (changed) {
      const sourceChanged = JSON.stringify(spec.source) !== JSON.stringify(this.#spec?.source);
      this.#spec = spec;
      // The usage API's credential stays in memory: storage gets the spec without it.
      await this.ctx.storage.put("spec", { ...spec, source: { ...spec.source, auth: spec.source.auth === undefined ? undefined : STORED_WITHOUT_AUTH } });
      if (sourceChanged || this.#polled === null) this.#polling = this.#poll().finally(() => (this.#polling = null));
      await this.ctx.storage.setAlarm(Date.now() + spec.source.poll_s * 1000);
    }
    // A call that arrives while the first poll is out (the usage API's fetch lets it in) waits for its answer.
    if (this.#polling) await this.#polling;
  }

  async #poll(): Promise<void> {
    const spec = this.#spec!;
    const source = spec.source;
    const headers: Record<string, string> = { accept: "application/json" };
    if (source.auth === STORED_WITHOUT_AUTH) {
      // Restarted since the last sync: the next one (a request, or the cron within a minute) brings the credential.
      this.#lastError = "waiting for the usage API's credential from the next sync (the object restarted)";
      return;
    }
    if (source.auth) headers.authorization = `Bearer ${source.auth}`;
    try {
      const response = await fetch(source.url, { headers, signal: AbortSignal.timeout(source.timeout_ms) });
      if (!response.ok) {
        await response.body?.cancel();
        throw new PollError(`usage API answered HTTP ${response.status}`);
      }
      const body: unknown = await response.json().catch(() => {
        throw new PollError("usage API answered something that is not JSON");
      });
      const used = numberAt(body, source.used_path, "used_path");
      const limit = source.limit_path !== undefined ? numberAt(body, source.limit_path, "limit_path") : spec.limit;
      const now = clock.now();
      const resetAt = source.reset_path !== undefined ? timeAt(body, source.reset_path) : this.#nextFixedReset(now);
      this.#polled = { used, limit, resetAt: source.window === "rolling" ? null : resetAt, at: now };
      this.#since = 0; // the source now counts what isolates had reported
      this.#sinceWindow = this.#currentReset(now);
      this.#lastError = null;
      if (this.#shortAt !== null && limit - used > this.#shortAt) this.#shortAt = null; // more than when isolates ran short: usable again
      await this.ctx.storage.put({ polled: this.#polled, since: { units: 0, window: this.#sinceWindow } });
    } catch (error) {
      // The message is ours or the runtime's (timeout, DNS); never the URL or the key.
      this.#lastError = error instanceof PollError ? error.message : (error as Error)?.name === "TimeoutError" ? `usage API did not answer within ${source.timeout_ms} ms` : "usage API could not be reached";
    }
  }

  /** With no reset time from the source, a fixed window restarts every window_s from the first poll. */
  #nextFixedReset(now: number): number {
    const windowMs = this.#spec!.source.window_s * 1000;
    const reset = this.#polled?.resetAt ?? now + windowMs;
    return reset > now ? reset : reset + Math.floor((now - reset) / windowMs + 1) * windowMs;
  }

  /** When the window `now` is in resets: the last poll's reset, or past it, the one a whole number of windows later (null: rolling, or never polled). */
  #currentReset(now: number): number | null {
    const polled = this.#polled;
    if (!polled || polled.resetAt === null) return null;
    return polled.resetAt > now ? polled.resetAt : this.#nextFixedReset(now);
  }

  /** Units isolates reported in a window that has since reset no longer count. */
  #turnWindow(now: number): void {
    const current = this.#currentReset(now);
    if (current === this.#sinceWindow) return;
    this.#since = 0;
    this.#sinceWindow = current;
    this.#shortAt = null; // a new window: isolates find out afresh whether it is short
  }

  #state(now: number): QuotaState {
    const spec = this.#spec;
    const polled = this.#polled;
    const staleMs = (spec?.source.stale_after_s ?? 0) * 1000;
    let failSafe: QuotaState["failSafe"] = null;
    if (!polled) failSafe = "never_polled";
    else if (now - polled.at > staleMs) failSafe = "source_unreachable";
    let remaining = 0;
    const limit = polled?.limit ?? spec?.limit ?? 0;
    this.#turnWindow(now);
    if (polled && failSafe === null) {
      // Past a fixed window's reset, the usage the last poll saw is gone until the next poll says otherwise.
      const reset = polled.resetAt !== null && now >= polled.resetAt;
      remaining = Math.max(0, limit - (reset ? 0 : polled.used) - this.#since);
    }
    const reason = failSafe !== null ? "fail_safe" : remaining <= 0 || this.#shortAt !== null ? "used_up" : null;
    if (reason !== null && reason !== this.#exhausted && polled !== null) this.#exhaustions[reason]++; // never polled is not an event: it never was usable
    this.#exhausted = reason;
    return {
      remaining,
      limit,
      unit: spec?.unit ?? "tokens",
      // A reset that has passed is followed by the next one, a window later: pacing must not read "resets now" until the next poll.
      resetAt: this.#currentReset(now),
      failSafe,
      polledAt: polled?.at ?? null,
      lastError: this.#lastError,
      exhaustions: { ...this.#exhaustions },
    };
  }
}

class PollError extends Error {}

const STORED_WITHOUT_AUTH = "\u0000stored-without-auth"; // stands in for a credential in storage; no real token looks like it
const APPLIED_PREFIX = "applied:";

function numberAt(body: unknown, path: string, what: string): number {
  const found = get(body, compilePath(path));
  const value = typeof found.value === "string" ? Number(found.value) : found.value;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) throw new PollError(`usage API answer has no non-negative number at ${what} "${path}"`);
  return value;
}

/** Epoch seconds, epoch ms (large values) or an ISO time. */
function timeAt(body: unknown, path: string): number {
  const found = get(body, compilePath(path));
  if (typeof found.value === "number" && Number.isFinite(found.value)) return found.value > 1e12 ? found.value : found.value * 1000;
  if (typeof found.value === "string") {
    const parsed = Date.parse(found.value);
    if (Number.isFinite(parsed)) return parsed;
    const n = Number(found.value);
    if (Number.isFinite(n)) return n > 1e12 ? n : n * 1000;
  }
  throw new PollError(`usage API answer has no time at reset_path "${path}"`);
}
