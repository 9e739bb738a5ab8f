import type { Acked, Sealed } from "../../core/state/batches";
import type { Keeper } from "./sync-loop";
import { SyncLoop, waitAtMost } from "./sync-loop";

export const COLD_WAIT_MS = 2_000; // a first request waits this long for an object's answer, then goes on with what it has
export const MAX_UNACKED_BATCHES = 20; // batches kept while an object does not answer (~10 s at 500 ms); older ones are dropped, logged
export const MAX_BATCH_AGE_MS = 300_000; // an unacknowledged batch older than this is dropped: the objects forget a silent isolate after APPLIED_TTL_MS (10 min), so a later resend could count twice

/**
 * One isolate's client of one Durable Object: the protocol every shared-state agent
 * (pool, affinity shard, RouteWise envelope, quota and slots, bandit node) follows, each
 * adding only its payload and what it makes of the object's answer.
 *
 * - **Cold wait.** With no view yet, `ready` waits for the object at most COLD_WAIT_MS,
 *   then the request goes on with what the isolate has. Once such a wait goes unanswered,
 *   no request waits for that object again: the loop asks once per interval until it
 *   answers. `prefetch` starts a request's first exchange early, so its other waits
 *   overlap it.
 * - **Background refresh.** An exchange runs inside a request's `waitUntil`, never
 *   awaited by it: at most one at a time and one per `intervalMs` (the view's staleness
 *   bound, plus one round trip, while requests come), sooner when marked urgent.
 * - **Batches.** What the isolate gathered since the last exchange is sealed into a batch
 *   with the next sequence number and kept until the object acknowledges it; every
 *   exchange sends all unacknowledged batches, so one that failed goes again with the
 *   next (restore on failure), and the object applies each batch once
 *   (src/core/state/applied-ledger.ts).
 * - **Bounded backlog.** At most MAX_UNACKED_BATCHES, none older than MAX_BATCH_AGE_MS;
 *   past either, the oldest are dropped with a `shared_state_reports_dropped` log.
 * - **Adoption order.** An answer older than the one adopted never replaces it.
 * - **`flush()`** runs an exchange now and waits for it: for reads that must include this
 *   isolate's news (/metrics, /routing).
 */
export abstract class StateClient<B extends object, V extends Acked> {
  protected view: V | null = null;
  #viewAt = -Infinity;
  /** A cold wait went unanswered: until the object answers, requests no longer wait for it (the loop keeps asking). */
  #coldFailed = false;
  /** First exchanges requests started early (`prefetch`), each for its own request's cold wait. */
  readonly #early = new WeakMap<Keeper, Promise<void>>();
  #unacked: { batch: Sealed<B>; sealedAt: number }[] = [];
  /** `unacked` as last built: agents read it on every request, and it changes only with an exchange. */
  #unackedBatches: Sealed<B>[] | null = null;
  #seq = 0;
  #exchanges = 0;
  #adopted = 0;
  #urgent = false;
  #disposed = false;
  readonly #loop: SyncLoop;

  constructor(
    /** The object's name (`pool:gpu`), for logs. */
    protected readonly object: string,
    /** At most one exchange per interval: bounds the view's age while requests come. */
    protected readonly intervalMs: number,
    protected readonly now: () => number = Date.now,
  ) {
    this.#loop = new SyncLoop(() => this.#exchange(), intervalMs, now);
  }

  /** Names the exchange in logs (a class name does not survive minification). */
  protected abstract readonly what: string;

  /** What the isolate gathered since the last batch, as one payload; null when there is nothing to say. */
  protected abstract drain(): B | null;

  /** One exchange: the batches (oldest first) and the object's own fields out, its answer back (or a throw). */
  protected abstract send(batches: Sealed<B>[], exchange: number): Promise<V>;

  /** An answer newer than any adopted so far; `sentAt` is when its exchange left. Default: it becomes the view. */
  protected adopt(view: V, _sentAt: number): void {
    this.view = view;
  }

  /** False for an object that has no view to refresh: it is called only with news (affinity shards). */
  protected readonly refreshes: boolean = true;

  get hasView(): boolean {
    return this.view !== null;
  }

  /** Real ms since the object last answered this isolate. */
  get viewAgeMs(): number {
    return this.now() - this.#viewAt;
  }

  /** Batches sent and not yet acknowledged, oldest first: the same array until they change (read it, never write it). */
  protected get unacked(): readonly Sealed<B>[] {
    return (this.#unackedBatches ??= this.#unacked.map((u) => u.batch));
  }

  /** An exchange is running or waits for its interval: asking for one now changes nothing. */
  protected get exchangePending(): boolean {
    return this.#loop.pending;
  }

  /** How many batches wait for an acknowledgement (for tests and /routing). */
  get backlog(): number {
    return this.#unacked.length;
  }

  /** Real time the last exchange from the loop started. */
  protected get lastExchangeAt(): number {
    return this.#loop.lastStart;
  }

  /** The view, fetched first (bounded wait) when this isolate has none yet; otherwise refreshed in the background. */
  async ready(keeper: Keeper): Promise<void> {
    if (this.view !== null) {
      this.refresh(keeper);
      return;
    }
    if (this.#coldFailed) {
      // Waiting again would stall one request in every COLD_WAIT_MS plus an interval for as
      // long as the object stays away; the loop's exchanges (one per interval) hear it return.
      this.#loop.request(keeper);
      return;
    }
    // Only the request that started an early exchange waits for it; requests cold at once
    // each ask for themselves. Sharing one exchange among them lost exactly one report of
    // 1,000 in every run of test/integration/leases.test.ts (most likely its one request
    // whose client leaves during the cold wait: one waiting for its own exchange, held by
    // its own waitUntil, resumes and reports 499; one waiting for another's did not, even
    // holding that exchange in its own waitUntil).
    if (!this.#early.has(keeper)) this.prefetch(keeper);
    const exchange = this.#early.get(keeper);
    if (!exchange) return;
    this.#early.delete(keeper);
    await waitAtMost(exchange, COLD_WAIT_MS);
    if (this.view === null) this.#coldFailed = true;
  }

  /**
   * Starts a cold isolate's first exchange for `keeper`'s request without waiting for it
   * (none while the object is unreachable just now): that request's other waits (its
   * limits' grant) overlap it, and its `ready` then waits for this exchange instead of
   * starting one after them.
   */
  prefetch(keeper: Keeper): void {
    if (this.view !== null) return;
    if (this.#coldFailed) return void this.#loop.request(keeper); // paced by the loop, not one exchange per request
    const exchange = this.#exchange();
    keeper.waitUntil(exchange);
    this.#early.set(keeper, exchange);
  }

  /** Asks for a fresher view in the background once the current one has aged past the interval. */
  refresh(keeper: Keeper): void {
    if (this.now() - this.#viewAt >= this.intervalMs) this.#loop.request(keeper);
  }

  /** News to send: an exchange within the interval (at once if something urgent was marked). */
  nudge(keeper: Keeper): void {
    this.#loop.request(keeper, this.#urgent);
  }

  /** The next exchange should not wait for the interval (news every isolate should route by: a circuit tripped). */
  protected markUrgent(): void {
    this.#urgent = true;
  }

  /** An exchange now, awaited. */
  async flush(): Promise<void> {
    await this.#exchange();
  }

  /** Stops exchanging, as an evicted isolate would (tests use it to play one). */
  dispose(): void {
    this.#disposed = true;
    this.#loop.dispose();
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  #seal(): void {
    const payload = this.drain();
    const now = this.now();
    if (payload !== null) {
      this.#unacked.push({ batch: { ...payload, seq: ++this.#seq }, sealedAt: now });
      this.#unackedBatches = null;
    }
    let drop = 0;
    while (drop < this.#unacked.length && (this.#unacked.length - drop > MAX_UNACKED_BATCHES || now - this.#unacked[drop]!.sealedAt > MAX_BATCH_AGE_MS)) drop++;
    if (drop === 0) return;
    const dropped = this.#unacked.splice(0, drop);
    this.#unackedBatches = null;
    console.warn(JSON.stringify({ event: "shared_state_reports_dropped", what: this.what, object: this.object, batches: drop, first: dropped[0]!.batch.seq, last: dropped[drop - 1]!.batch.seq }));
  }

  async #exchange(): Promise<void> {
    if (this.#disposed) return;
    this.#seal();
    if (!this.refreshes && this.#unacked.length === 0) return;
    this.#urgent = false;
    const exchange = ++this.#exchanges;
    const sentAt = this.now();
    let answer: V;
    try {
      answer = await this.send([...this.unacked], exchange);
    } catch (error) {
      // The batches stay unacknowledged: the next exchange carries them.
      console.error(JSON.stringify({ event: "shared_state_unavailable", what: this.what, object: this.object, message: (error as Error)?.message ?? String(error) }));
      return;
    }
    if (this.#disposed) return;
    this.#unacked = this.#unacked.filter((u) => u.batch.seq > answer.acked);
    this.#unackedBatches = null;
    if (exchange < this.#adopted) return; // a slower, older answer: the newer one already stands
    this.#adopted = exchange;
    this.#viewAt = this.now();
    this.adopt(answer, sentAt);
  }
}
