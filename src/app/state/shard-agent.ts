import type { PinCache } from "../../core/affinity/pins";
import { pinSlot } from "../../core/affinity/pins";
import type { ShardRpc } from "./stubs";
import type { Keeper } from "./sync-loop";
import { SyncLoop } from "./sync-loop";
import type { PinClaim, PinDrop, PinResult, PinTouch, ShardBatch } from "../../core/pool/wire";

/**
 * One isolate's agent for one affinity shard: what the isolate's pin cache learned
 * (uses that slide a TTL, pins dropped after errors, cache hits) goes to the shard in a
 * batch at most every `intervalMs`, and the shard's answer corrects the cache. Only a
 * pin the cache cannot answer costs an awaited call (`claim`).
 */
export class ShardAgent {
  #touches = new Map<string, PinTouch>();
  #drops = new Map<string, PinDrop>();
  #hits = new Map<string, number>();
  #disposed = false;
  readonly #loop: SyncLoop;

  constructor(
    private readonly rpc: () => ShardRpc,
    private readonly pins: PinCache,
    intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.#loop = new SyncLoop(() => this.#exchange(), intervalMs, now);
  }

  /** The shard decides: its stored pin if usable, else the proposal. A queued drop for this pin rides along, so it lands first. */
  async claim(claim: Omit<PinClaim, "drop">): Promise<PinResult> {
    const slot = pinSlot(claim.key, claim.model);
    const drop = this.#drops.get(slot);
    this.#drops.delete(slot);
    try {
      return await this.rpc().claim({ ...claim, drop: drop?.replica ?? null });
    } catch (error) {
      if (drop) this.#drops.set(slot, drop);
      throw error;
    }
  }

  hit(model: string, keeper: Keeper): void {
    this.#hits.set(model, (this.#hits.get(model) ?? 0) + 1);
    this.#loop.request(keeper);
  }

  touch(touch: PinTouch, keeper: Keeper): void {
    const slot = pinSlot(touch.key, touch.model);
    const queued = this.#touches.get(slot);
    // A slide wins over a plain check; the latest use wins over an earlier one.
    if (!queued || touch.usedAt !== null) this.#touches.set(slot, touch);
    this.#loop.request(keeper);
  }

  drop(drop: PinDrop, keeper: Keeper): void {
    const slot = pinSlot(drop.key, drop.model);
    this.#drops.set(slot, drop);
    this.#touches.delete(slot);
    this.#loop.request(keeper);
  }

  async flush(): Promise<void> {
    await this.#exchange();
  }

  dispose(): void {
    this.#disposed = true;
    this.#loop.dispose();
  }

  async #exchange(): Promise<void> {
    if (this.#disposed || (this.#touches.size === 0 && this.#drops.size === 0 && this.#hits.size === 0)) return;
    const batch: ShardBatch = { touches: [...this.#touches.values()], drops: [...this.#drops.values()], hits: Object.fromEntries(this.#hits) };
    this.#touches = new Map();
    this.#drops = new Map();
    this.#hits = new Map();
    const sentAt = this.now();
    let answer;
    try {
      answer = await this.rpc().sync(batch);
    } catch (error) {
      // Drops and slides are idempotent, so they go again with the next batch; so do the hit counts.
      for (const d of batch.drops) this.#drops.set(pinSlot(d.key, d.model), d);
      for (const t of batch.touches) if (!this.#touches.has(pinSlot(t.key, t.model))) this.#touches.set(pinSlot(t.key, t.model), t);
      for (const [model, n] of Object.entries(batch.hits)) this.#hits.set(model, (this.#hits.get(model) ?? 0) + n);
      console.error(JSON.stringify({ event: "shared_state_unavailable", what: "pin_sync", message: (error as Error)?.message ?? String(error) }));
      return;
    }
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
