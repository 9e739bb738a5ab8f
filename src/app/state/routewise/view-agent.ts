import type { Keeper } from "../sync-loop";
import { SyncLoop, waitAtMost } from "../sync-loop";

export const ROUTEWISE_SYNC_MS = 1_000; // views of envelopes, quotas and slots are at most a second old while traffic flows (plus one round trip)
const COLD_WAIT_MS = 2_000; // a first request waits this long for an object's answer, then decides on what it has

/**
 * What the RouteWise agents share: a view of one object, refreshed in the background
 * at most every ROUTEWISE_SYNC_MS while requests come, sent the isolate's batched news
 * with each exchange. Only an isolate's first request for the object waits for it.
 */
export abstract class ViewAgent<V> {
  protected view: V | null = null;
  #viewAt = -Infinity;
  #coldFailedAt = -Infinity;
  readonly #loop: SyncLoop;

  constructor(protected readonly now: () => number = Date.now) {
    this.#loop = new SyncLoop(() => this.#sync(), ROUTEWISE_SYNC_MS, now);
  }

  /** Names the exchange in logs (a class name does not survive minification). */
  protected abstract readonly what: string;

  /** One exchange with the object: send what is pending, return its answer (or throw). */
  protected abstract exchange(): Promise<V>;

  /** What to do with an answer (default: adopt it as the view). */
  protected adopt(view: V): void {
    this.view = view;
  }

  get hasView(): boolean {
    return this.view !== null;
  }

  get viewAgeMs(): number {
    return this.now() - this.#viewAt;
  }

  /** The view, fetched first (bounded wait) when this isolate has none yet; otherwise refreshed in the background. */
  async ready(keeper: Keeper): Promise<void> {
    if (this.view !== null) {
      if (this.now() - this.#viewAt >= ROUTEWISE_SYNC_MS) this.#loop.request(keeper);
      return;
    }
    if (this.now() - this.#coldFailedAt < ROUTEWISE_SYNC_MS) return; // unreachable just now: don't make every request wait
    const sync = this.#sync();
    keeper.waitUntil(sync);
    await waitAtMost(sync, COLD_WAIT_MS);
    if (this.view === null) this.#coldFailedAt = this.now();
  }

  /** Ask for an exchange soon (news to send). */
  nudge(keeper: Keeper): void {
    this.#loop.request(keeper);
  }

  /** An exchange now, awaited: a read that must see this isolate's news (/metrics, /routing). */
  async flush(): Promise<void> {
    await this.#sync();
  }

  dispose(): void {
    this.#loop.dispose();
  }

  async #sync(): Promise<void> {
    try {
      this.adopt(await this.exchange());
      this.#viewAt = this.now();
    } catch (error) {
      console.error(JSON.stringify({ event: "shared_state_unavailable", what: this.what, message: (error as Error)?.message ?? String(error) }));
    }
  }
}
