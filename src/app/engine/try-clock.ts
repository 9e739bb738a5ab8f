/** Why a try's fetch or body was aborted: the reason decides the attempt's outcome. */
export class TryTimeout extends Error {}
export class DeadlineExceeded extends Error {}
export class ClientGone extends Error {}
export class Cancelled extends Error {}

/**
 * One timer per try: it fires at the try's header timeout (or the deadline, if sooner),
 * then, once headers have arrived, at the deadline; with a `tick`, also every
 * `tick.everyMs` in between, to run it. Arming and clearing a timer per phase, and a
 * second per-request timer for the caller's heartbeat, showed in profiles.
 */
export class TryClock {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #headers = false;
  #stopped = false;
  readonly #headersBy: number;
  readonly #deadlineFirst: boolean;

  constructor(
    private readonly controller: AbortController,
    tryStart: number,
    private readonly deadlineAt: number,
    tryTimeoutMs: number,
    private readonly tick: { everyMs: number; run: () => void } | undefined,
  ) {
    const budget = Math.min(tryTimeoutMs, deadlineAt - tryStart);
    this.#deadlineFirst = budget < tryTimeoutMs;
    this.#headersBy = tryStart + budget;
    this.#arm(tryStart);
  }

  headersArrived(): void {
    this.#headers = true;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(now: number): void {
    if (this.#stopped) return;
    const wait = Math.max(0, (this.#headers ? this.deadlineAt : this.#headersBy) - now);
    this.#timer = setTimeout(() => this.#fire(), this.tick ? Math.min(wait, this.tick.everyMs) : wait);
  }

  #fire(): void {
    const now = Date.now();
    // The reason is built only now: an Error captures a stack, which costs.
    if (!this.#headers && now >= this.#headersBy) return this.controller.abort(this.#deadlineFirst ? new DeadlineExceeded() : new TryTimeout());
    if (this.#headers && now >= this.deadlineAt) return this.controller.abort(new DeadlineExceeded());
    this.tick?.run();
    this.#arm(now);
  }
}
