import { compilePath, get } from "../../lib/gjson";
import { AppliedLedger } from "../state/applied-ledger";
import { Naming } from "../state/untold";
import { CLOCK_SKEW_MS, inRange, MAX_QUOTA_UNITS } from "./bounds";
import type { QuotaAnswer, QuotaSpec, QuotaState, QuotaSync } from "./wire";

const MAX_LAST_ERROR_CHARS = 1_000; // our own messages are a line; a stored one longer than this is not one of them

/** The usage API's last good answer, and when it came (epoch ms). */
export interface QuotaPolled {
  used: number;
  limit: number;
  /** Epoch ms the window resets (null: rolling). */
  resetAt: number | null;
  at: number;
}

/** Units isolates reported since the last poll, and the reset ending the window they were used in. */
export interface QuotaSince {
  units: number;
  window: number | null;
}

/** Times a quota became unusable, by reason, and why it is unusable now (null: usable), so a restart does not count the same exhaustion again. */
export interface QuotaExhaustions {
  used_up: number;
  fail_safe: number;
  now: "used_up" | "fail_safe" | null;
}

/** A usage-API answer the quota cannot read; its message is safe to show (never the URL or a key). */
export class PollError extends Error {}

/**
 * One provider quota as a pure state machine: the usage API's last answer, the units
 * isolates reported since (each batch taken off once, src/core/state/applied-ledger.ts),
 * the window they belong to, and the fail-safe and exhaustion bookkeeping. The object
 * (src/platform/objects/provider-quota.ts) fetches the usage API and stores what this
 * machine hands it; time is an argument.
 */
export class QuotaMachine {
  readonly ledger = new AppliedLedger();
  #spec: QuotaSpec | null = null;
  /** When a config or an isolate last named this quota; polls stop SPEC_UNTOLD_MS after. */
  readonly #naming = new Naming();
  /** False while the spec is the one read back from storage, which was stored without its secrets. */
  #credentialsKnown = false;
  #polled: QuotaPolled | null = null;
  #since = 0;
  /** The reset ending the window `#since` was reported in. */
  #sinceWindow: number | null = null;
  #lastError: string | null = null;
  /** Why the quota is exhausted now (null: usable); an event is counted when it becomes non-null. */
  #exhausted: "used_up" | "fail_safe" | null = null;
  /** Remaining units when an isolate last found them too few for a request; cleared when a poll shows more. */
  #shortAt: number | null = null;
  #exhaustions = { used_up: 0, fail_safe: 0 };

  /**
   * What storage held (the object starting). A stored poll or count that cannot be
   * believed at `now` (see sanePolled) is dropped: the quota is then as unknown as one
   * never polled, and fails safe until the next good poll.
   */
  restore(stored: { spec: QuotaSpec | null; polled: QuotaPolled | null; since: QuotaSince | null; exhaustions?: QuotaExhaustions | null; lastError?: string | null }, now: number): void {
    this.#spec = stored.spec;
    if (typeof stored.lastError === "string" && stored.lastError.length <= MAX_LAST_ERROR_CHARS) this.#lastError = stored.lastError;
    this.#naming.told(now); // a restarted object polls on (without the credential) until SPEC_UNTOLD_MS says its quota is gone
    const counted = stored.exhaustions;
    if (counted && inRange(counted.used_up, MAX_QUOTA_UNITS) && inRange(counted.fail_safe, MAX_QUOTA_UNITS)) {
      this.#exhaustions = { used_up: counted.used_up, fail_safe: counted.fail_safe };
      this.#exhausted = counted.now === "used_up" || counted.now === "fail_safe" ? counted.now : null;
    }
    this.#credentialsKnown = false;
    this.#polled = stored.polled && sanePolled(stored.polled, stored.spec, now) ? stored.polled : null;
    const since = stored.since;
    if (since && inRange(since.units, MAX_QUOTA_UNITS) && (since.window === null || inRange(since.window, MAX_TIME_MS))) [this.#since, this.#sinceWindow] = [since.units, since.window];
  }

  get spec(): QuotaSpec | null {
    return this.#spec;
  }

  /** A config (the cron, a publish) or an isolate named this quota at `now`; true when its polls had stopped, so the alarm must be armed again. */
  told(now: number): boolean {
    return this.#naming.told(now);
  }

  /** Whether some live config still names this quota (told within SPEC_UNTOLD_MS); false stops its polls until it is told again. */
  named(now: number): boolean {
    return this.#naming.named(now);
  }

  /** Why the last poll failed (our words, never the URL or the key); null after a good one. */
  get lastError(): string | null {
    return this.#lastError;
  }

  get polled(): QuotaPolled | null {
    return this.#polled;
  }

  /** Times the quota became unusable, by reason: a counter /metrics shows, kept across restarts. */
  get exhaustions(): QuotaExhaustions {
    return { ...this.#exhaustions, now: this.#exhausted };
  }

  get since(): QuotaSince {
    return { units: this.#since, window: this.#sinceWindow };
  }

  /**
   * New terms: whether they changed (store them), and whether the usage API must be
   * polled now (a new source, or never polled). The newest config version wins: while a
   * rollout converges, isolates on an older version still send its terms, and those are
   * ignored, so the limit never flips between versions and the usage API is polled once
   * per version, not on every call. Terms of the version already held are ignored too (one
   * config cannot give one quota two terms: the loader refuses that), except right after
   * a restart: the stored terms lack their credentials, and the same version, told
   * again, brings them.
   */
  adopt(spec: QuotaSpec): { changed: boolean; poll: boolean } {
    if (JSON.stringify(spec) === JSON.stringify(this.#spec)) {
      this.#credentialsKnown = true;
      return { changed: false, poll: false };
    }
    const held = this.#spec;
    if (held && held.version !== undefined && spec.version !== undefined && (spec.version < held.version || (spec.version === held.version && this.#credentialsKnown))) {
      return { changed: false, poll: false };
    }
    const sourceChanged = JSON.stringify(spec.source) !== JSON.stringify(held?.source);
    this.#spec = spec;
    this.#credentialsKnown = true;
    return { changed: true, poll: sourceChanged || this.#polled === null };
  }

  /**
   * An isolate's batches of usage, each taken off once; the quota as it stands out.
   * `stored` is true when `since` changed: store it, with the isolate's applied seq, in one write.
   */
  sync(request: QuotaSync, now: number): { answer: QuotaAnswer; stored: boolean } {
    let used = 0;
    let short = false;
    for (const batch of this.ledger.accept(request.isolate, request.batches, now)) {
      if (inRange(batch.used, MAX_QUOTA_UNITS) && batch.used > 0) used += batch.used;
      short ||= batch.short === true;
    }
    if (used > 0) {
      this.#turnWindow(now);
      this.#since += used;
    }
    if (short && this.#shortAt === null) this.#shortAt = this.state(now).remaining;
    return { answer: { ...this.state(now), acked: this.ledger.applied(request.isolate) }, stored: used > 0 };
  }

  /**
   * A usage-API answer, read at the paths of the spec it was polled with; the units isolates reported since the
   * last poll are now the source's to count. Throws PollError when the answer lacks what
   * the paths name (the caller records it with `pollFailed`).
   */
  polledAnswer(spec: QuotaSpec, body: unknown, now: number): void {
    const source = spec.source;
    const used = numberAt(body, source.used_path, "used_path");
    const limit = source.limit_path !== undefined ? numberAt(body, source.limit_path, "limit_path") : spec.limit;
    const resetAt = source.window === "rolling" ? null : source.reset_path !== undefined ? resetTimeAt(body, source.reset_path, source.window_s, now) : this.#nextFixedReset(now);
    this.#polled = { used, limit, resetAt, at: now };
    this.#since = 0;
    this.#sinceWindow = this.#currentReset(now);
    this.#lastError = null;
    if (this.#shortAt !== null && limit - used > this.#shortAt) this.#shortAt = null; // more than when isolates ran short: usable again
  }

  /** Why the last poll failed (shown on /routing; never a credential or the URL). */
  pollFailed(message: string): void {
    this.#lastError = message;
  }

  /** The quota as it stands at `now`. */
  state(now: number): QuotaState {
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
}

const DECIMAL = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

function numberAt(body: unknown, path: string, what: string): number {
  const found = get(body, compilePath(path));
  // Some APIs write numbers as strings: decimal ones only ("" and " " would be 0, "0x10" 16).
  const value = typeof found.value === "string" ? (DECIMAL.test(found.value) ? Number(found.value) : NaN) : found.value;
  if (!inRange(value, MAX_QUOTA_UNITS)) throw new PollError(`usage API answer has no number from 0 to ${MAX_QUOTA_UNITS} at ${what} "${path}"`);
  return value;
}

const MAX_TIME_MS = 8.64e15; // the largest epoch ms a Date can hold: a time past it cannot even be shown

/**
 * A fixed window's reset as the usage API tells it, believed only when it is ahead of
 * `now` by at most one window (window_s, plus clock skew). A reset already past means the
 * answer describes a window that has ended: its `used` says nothing of the window now,
 * and taking the reset at its word would offer the whole quota afresh. One further off
 * is not this quota's window. Either way the answer is refused (PollError), so the quota
 * is as unknown as after a failed poll: the last good poll holds until stale_after_s,
 * then it fails safe.
 */
function resetTimeAt(body: unknown, path: string, windowS: number, now: number): number {
  const resetAt = timeAt(body, path);
  if (!(resetAt > now)) throw new PollError(`usage API answer's reset time at reset_path "${path}" has passed: the answer is stale`);
  if (!(resetAt <= now + windowS * 1000 + CLOCK_SKEW_MS)) throw new PollError(`usage API answer's reset time at reset_path "${path}" is more than one window (window_s ${windowS}) ahead`);
  return resetAt;
}

/**
 * A stored poll that can be believed at `now`: counts within MAX_QUOTA_UNITS, taken no
 * later than now (a poll from the future would never go stale), and a reset (if any) a
 * real time no more than one window past the poll.
 */
function sanePolled(p: QuotaPolled, spec: QuotaSpec | null, now: number): boolean {
  const windowMs = (spec?.source.window_s ?? Infinity) * 1000;
  return (
    inRange(p.used, MAX_QUOTA_UNITS) &&
    inRange(p.limit, MAX_QUOTA_UNITS) &&
    inRange(p.at, now + CLOCK_SKEW_MS) &&
    (p.resetAt === null || (inRange(p.resetAt, MAX_TIME_MS) && p.resetAt <= p.at + windowMs + CLOCK_SKEW_MS))
  );
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
