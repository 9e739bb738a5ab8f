import type { Keeper } from "../sync-loop";
import type { SlotsRpc } from "./stubs";
import type { SlotGrant, SlotNews } from "../../../core/routewise/wire";
import { StateClient } from "../state-client";
import { ROUTEWISE_SYNC_MS } from "./sync-interval";

const GRANT_TTL_MS = 10_000; // ten syncs: a grant outlives a slow object call but a vanished isolate's slots come back soon
const KEEP_IDLE_MS = 2_000; // slots used within this long are kept; older surplus goes back to the pool on the next sync

/**
 * One isolate's share of a concurrency subscription's slots: the shared-state protocol
 * (./state-client.ts) with no batches, since every sync states the slots this isolate
 * wants to hold, absolutely (a request sent twice asks for the same grant). A request
 * takes a slot this isolate already holds with no call at all; only when every held
 * slot is busy does it ask the object for one more (one awaited call, like a pin miss).
 * Slots not needed lately are given back on the next sync, so an idle isolate does not
 * starve the others.
 */
export class SlotAgent extends StateClient<SlotNews, SlotGrant> {
  protected readonly what = "slot_sync";
  #limit: number;
  #inUse = 0;
  /** Acquires sent and not yet answered: each asks for its own slot on top of those in use. */
  #pending = 0;
  #peak = 0;
  #peakAt = -Infinity;

  constructor(
    private readonly isolate: () => string,
    id: string,
    limit: number,
    private readonly rpc: () => SlotsRpc,
    now?: () => number,
  ) {
    super(`slots:${id}`, ROUTEWISE_SYNC_MS, now);
    this.#limit = limit;
  }

  update(limit: number): void {
    this.#limit = limit;
  }

  get limit(): number {
    return this.#limit;
  }

  get inUse(): number {
    return this.#inUse;
  }

  get granted(): number {
    return this.view?.granted ?? 0;
  }

  /** Slots a request could take now: free ones held here, plus ones no isolate holds (those cost a call). */
  get free(): number {
    return Math.max(0, this.granted - this.#inUse) + (this.view?.unclaimed ?? this.#limit);
  }

  /** Takes a held slot if one is free; false means only `acquire` can get one. */
  tryTake(): boolean {
    if (this.#inUse >= this.granted) return false;
    this.#take();
    return true;
  }

  /**
   * Asks the object for one more slot and takes it; false when the subscription has none
   * free. Concurrent callers each count: the n-th waiting one asks for the slots in use
   * plus n, so n callers get n slots when n are free (each asking for "in use + 1" got
   * them one slot between them). `log` is the asking request's trace id, for its log line.
   */
  async acquire(keeper: Keeper, log: Readonly<Record<string, string>> = {}): Promise<boolean> {
    this.#pending++;
    try {
      const grant = await this.rpc().acquire({ isolate: this.isolate(), limit: this.#limit, hold: this.#wanted(), ttlMs: GRANT_TTL_MS });
      this.view = grant;
      this.nudge(keeper); // the sync loop renews the grant from now on
    } catch (error) {
      console.error(JSON.stringify({ event: "shared_state_unavailable", what: "slot_acquire", message: (error as Error)?.message ?? String(error), ...log }));
      return false; // no slot is better than one the provider would refuse
    } finally {
      this.#pending--;
    }
    if (this.#inUse >= this.granted) return false;
    this.#take();
    return true;
  }

  release(keeper: Keeper): void {
    this.#inUse = Math.max(0, this.#inUse - 1);
    this.nudge(keeper);
  }

  /** Slots this isolate needs now: those in use and one for each acquire still waiting. */
  #wanted(): number {
    return this.#inUse + this.#pending;
  }

  #take(): void {
    this.#inUse++;
    if (this.#inUse >= this.#peak || this.now() - this.#peakAt > KEEP_IDLE_MS) {
      this.#peak = this.#inUse;
      this.#peakAt = this.now();
    }
  }

  protected drain(): null {
    return null;
  }

  protected send(): Promise<SlotGrant> {
    const now = this.now();
    if (now - this.#peakAt > KEEP_IDLE_MS) {
      this.#peak = this.#inUse;
      this.#peakAt = now;
    }
    return this.rpc().sync({ isolate: this.isolate(), limit: this.#limit, hold: Math.max(this.#wanted(), this.#peak), ttlMs: GRANT_TTL_MS, batches: [] });
  }
}
