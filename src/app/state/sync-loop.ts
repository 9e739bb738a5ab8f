/** What lends a live request to background work: `ctx.waitUntil`. */
export interface Keeper {
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * An object call a request awaits before its engine runs (a pin's claim, a probe's
 * admission), held in that request's `waitUntil`. A client that leaves cancels the I/O
 * its invocation awaits unless something holds the invocation open, and then nothing
 * after the await runs: not the engine, which would have seen the client gone and settled
 * the request (its report to the pool's object, a probe slot given back). Held, the call
 * completes and the request goes on to be settled.
 */
export function heldOpen<T>(keeper: Keeper, call: Promise<T>): Promise<T> {
  keeper.waitUntil(call.catch(() => {}));
  return call;
}

/** How long a request awaits one object call (a pin's claim, a probe's admission): as long as a cold wait, then it goes on without it. */
export const AWAITED_CALL_MS = 2_000;

/**
 * `heldOpen`, awaited at most AWAITED_CALL_MS: past it the request goes on without the
 * answer (it rejects), while the call itself is still held and may complete. State is
 * an optimisation of routing: an object that answers in 5 s (or never) must not turn
 * every request that needs it into a 504.
 */
export function heldOpenWithin<T>(keeper: Keeper, call: Promise<T>, ms = AWAITED_CALL_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([heldOpen(keeper, call), late]).finally(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
}

/**
 * How long the loop waits for one exchange before it stops counting on it. An object
 * answers in milliseconds (a cold start in a second or two), but a call can also never
 * settle: an object stuck awaiting, or I/O of a request context the runtime tore down.
 * Without a bound that one exchange would stop every later one for the isolate's life.
 */
export const EXCHANGE_GIVEN_UP_MS = 10_000;

/**
 * Runs an isolate's exchanges with one object: never two from the loop at once (unless
 * one has run past EXCHANGE_GIVEN_UP_MS), at most one per interval. Whoever asks lends
 * their request's `waitUntil`, because workerd ties timers and I/O to a live request; the
 * exchange then runs inside that request, never awaited by the one that asked. An
 * exchange given up on may still answer: the client keeps only answers newer than the
 * one it adopted, and objects apply a batch sent twice once.
 */
export class SyncLoop {
  /** Number of the exchange running (0: none); one given up on may end after a newer started. */
  #running = 0;
  #started = 0;
  /** When the scheduled exchange is due (-Infinity: none scheduled). */
  #dueAt = -Infinity;
  #again = false;
  #lastStart = -Infinity;
  #disposed = false;

  constructor(
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** An exchange runs now or is scheduled: a request (not urgent) adds nothing. */
  get pending(): boolean {
    return this.#busy || this.#scheduled;
  }

  /** An exchange is scheduled and its timer not overdue past the same bound (its request may be gone). */
  get #scheduled(): boolean {
    return this.now() < this.#dueAt + EXCHANGE_GIVEN_UP_MS;
  }

  /** An exchange runs and is not yet given up on. Checked when asked, not by a timer: a timer lives in a request that may be gone. */
  get #busy(): boolean {
    return this.#running !== 0 && this.now() - this.#lastStart < EXCHANGE_GIVEN_UP_MS;
  }

  /** Real time the last exchange started. */
  get lastStart(): number {
    return this.#lastStart;
  }

  /**
   * Runs an exchange as soon as the interval allows (now, if it already has). Urgent news
   * (a circuit changed phase) skips the wait, though never overlaps a running exchange.
   */
  request(keeper: Keeper, urgent = false): void {
    if (this.#disposed) return;
    if (this.#busy) {
      this.#again = true;
      return;
    }
    if (urgent) {
      this.#start(keeper); // a scheduled run still fires later and finds less to send
      return;
    }
    if (this.#scheduled) return;
    const wait = this.#lastStart + this.intervalMs - this.now();
    if (wait <= 0) {
      this.#start(keeper);
      return;
    }
    const dueAt = (this.#dueAt = this.now() + wait);
    keeper.waitUntil(
      new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => {
        if (this.#dueAt !== dueAt) return; // overdue and replaced: the newer timer starts it
        this.#dueAt = -Infinity;
        this.#start(keeper);
      }),
    );
  }

  /** Stops scheduling: what an evicted isolate does (tests use it to play one). */
  dispose(): void {
    this.#disposed = true;
  }

  #start(keeper: Keeper): void {
    if (this.#disposed || this.#busy) return;
    const exchange = ++this.#started;
    this.#running = exchange;
    this.#lastStart = this.now();
    keeper.waitUntil(
      this.run().finally(() => {
        if (this.#running !== exchange) return; // given up on: a newer exchange owns the loop
        this.#running = 0;
        if (!this.#again) return;
        this.#again = false;
        this.request(keeper);
      }),
    );
  }
}

/** Waits for `work` at most `ms`: a read that would rather go on with what it has than wait longer. */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  if (timer !== undefined) clearTimeout(timer);
}
