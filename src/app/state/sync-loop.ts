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

/**
 * Runs an isolate's exchanges with one object: never two from the loop at once, at most
 * one per interval. Whoever asks lends their request's `waitUntil`, because workerd ties
 * timers and I/O to a live request; the exchange then runs inside that request, never
 * awaited by the one that asked.
 */
export class SyncLoop {
  #running = false;
  #scheduled = false;
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
    return this.#running || this.#scheduled;
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
    if (this.#running) {
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
    this.#scheduled = true;
    keeper.waitUntil(
      new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => {
        this.#scheduled = false;
        this.#start(keeper);
      }),
    );
  }

  /** Stops scheduling: what an evicted isolate does (tests use it to play one). */
  dispose(): void {
    this.#disposed = true;
  }

  #start(keeper: Keeper): void {
    if (this.#disposed || this.#running) return;
    this.#running = true;
    this.#lastStart = this.now();
    keeper.waitUntil(
      this.run().finally(() => {
        this.#running = false;
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
