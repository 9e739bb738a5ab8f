import type { PinCache } from "../../core/affinity/pins";
import { pinSlot } from "../../core/affinity/pins";
import type { Sealed } from "../../core/state/batches";
import type { ShardRpc } from "./stubs";
import type { Keeper } from "./sync-loop";
import { heldOpenWithin } from "./sync-loop";
import { StateClient } from "./state-client";
import type { PinClaim, PinDrop, PinResult, PinTouch, ShardNews, ShardSyncResult } from "../../core/affinity/wire";

/**
 * One isolate's agent for one affinity shard: the shared-state protocol
 * (./state-client.ts) with the pin cache's news as payload. What the cache learned (uses
 * that slide a TTL, pins dropped after errors, cache hits) goes to the shard in a batch
 * at most every `intervalMs`, and the shard's answer corrects the cache. The shard has
 * no view to keep fresh, so an exchange happens only with news. Only a pin the cache
 * cannot answer costs an awaited call (`claim`).
 */
export class ShardAgent extends StateClient<ShardNews, ShardSyncResult> {
  protected readonly what = "pin_sync";
  protected override readonly refreshes = false;
  #touches = new Map<string, PinTouch>();
  #drops = new Map<string, PinDrop>();
  #hits = new Map<string, number>();

  constructor(
    private readonly isolate: () => string,
    shard: number,
    private readonly rpc: () => ShardRpc,
    private readonly pins: PinCache,
    intervalMs: number,
    now: () => number = Date.now,
  ) {
    super(`affinity:${shard}`, intervalMs, now);
  }

  /** The shard decides: its stored pin if usable, else the proposal. A drop for this pin not yet acknowledged rides along, so it lands first. */
  async claim(claim: Omit<PinClaim, "drop">, keeper: Keeper): Promise<PinResult> {
    const slot = pinSlot(claim.key, claim.model);
    const queued = this.#drops.get(slot);
    this.#drops.delete(slot);
    // A drop already in a batch may not have reached the shard either; dropping twice is harmless.
    const drop = queued ?? this.unacked.flatMap((b) => b.drops.filter((d) => pinSlot(d.key, d.model) === slot)).pop();
    try {
      return await heldOpenWithin(keeper, this.rpc().claim({ ...claim, drop: drop?.replica ?? null }));
    } catch (error) {
      if (queued) this.#drops.set(slot, queued);
      throw error;
    }
  }

  hit(model: string, keeper: Keeper): void {
    this.#hits.set(model, (this.#hits.get(model) ?? 0) + 1);
    this.nudge(keeper);
  }

  touch(touch: PinTouch, keeper: Keeper): void {
    const slot = pinSlot(touch.key, touch.model);
    const queued = this.#touches.get(slot);
    // A slide wins over a plain check; the latest use wins over an earlier one.
    if (!queued || touch.usedAt !== null) this.#touches.set(slot, touch);
    this.nudge(keeper);
  }

  drop(drop: PinDrop, keeper: Keeper): void {
    const slot = pinSlot(drop.key, drop.model);
    this.#drops.set(slot, drop);
    this.#touches.delete(slot);
    this.nudge(keeper);
  }

  protected drain(): ShardNews | null {
    if (this.#touches.size === 0 && this.#drops.size === 0 && this.#hits.size === 0) return null;
    const news: ShardNews = { touches: [...this.#touches.values()], drops: [...this.#drops.values()], hits: Object.fromEntries(this.#hits) };
    this.#touches = new Map();
    this.#drops = new Map();
    this.#hits = new Map();
    return news;
  }

  protected send(batches: Sealed<ShardNews>[]): Promise<ShardSyncResult> {
    return this.rpc().sync({ isolate: this.isolate(), batches });
  }

  protected override adopt(answer: ShardSyncResult, sentAt: number): void {
    const checkedAt = this.now();
    for (const { key, model, pin } of answer.pins) {
      const slot = pinSlot(key, model);
      const cached = this.pins.peek(slot);
      if (!cached || cached.checkedAt > sentAt) continue; // replaced since the batch left: newer than this answer
      if (pin === null) {
        this.pins.delete(slot); // dropped or expired at the shard: the next request claims afresh
        continue;
      }
      if (pin.replica !== cached.replica) cached.expiresAt = pin.expiresAt;
      else cached.expiresAt = Math.max(cached.expiresAt, pin.expiresAt);
      cached.replica = pin.replica;
      cached.checkedAt = checkedAt;
    }
  }
}
