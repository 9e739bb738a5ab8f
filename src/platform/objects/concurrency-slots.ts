import { DurableObject } from "cloudflare:workers";
import type { SlotGrant, SlotRequest, SlotSync } from "../../core/routewise/wire";
import { clock } from "./clock";

/**
 * The parallel slots of one concurrency subscription (`slots:<concurrency_pool or
 * model/route>`), leased to isolates. An isolate holds a grant of slots and uses them
 * with no call per request (src/app/state/routewise/slot-agent.ts); it asks for one more only
 * when all it holds are busy, and gives back what it has not needed lately on its next
 * sync. Grants never add up past the limit, so the provider never sees more requests at
 * once than it allows, whatever the number of isolates.
 *
 * Memory only, by design: grants isolate → {count, expiresAt}. A grant not renewed
 * within its ttl is freed, so slots of a vanished isolate (or of a restarted object,
 * whose isolates re-ask) come back by themselves.
 *
 * Delivery: a sync rides the shared-state protocol but carries no batches. Every
 * request states the grant it wants absolutely (`hold`), so one applied whose answer
 * was lost and sent again sets the same grant: idempotent by nature, nothing to dedupe
 * (the answer's `acked` is always 0).
 */
export class ConcurrencySlots extends DurableObject {
  #grants = new Map<string, { count: number; expiresAt: number }>();

  /** Grows (never shrinks) an isolate's grant toward `hold`, as far as free slots allow. */
  async acquire(request: SlotRequest): Promise<SlotGrant> {
    return this.#set(request, true);
  }

  /** Renews an isolate's grant and sets it to `hold` when that is less (slots given back). */
  async sync(request: SlotSync): Promise<SlotGrant> {
    return this.#set(request, false);
  }

  async snapshot(): Promise<{ granted: number; isolates: number }> {
    this.#sweep(clock.now());
    let granted = 0;
    for (const g of this.#grants.values()) granted += g.count;
    return { granted, isolates: this.#grants.size };
  }

  #set(request: SlotRequest, grow: boolean): SlotGrant {
    const now = clock.now();
    this.#sweep(now);
    const own = this.#grants.get(request.isolate)?.count ?? 0;
    let others = 0;
    for (const [isolate, g] of this.#grants) if (isolate !== request.isolate) others += g.count;
    const room = Math.max(0, request.limit - others); // a lowered limit is honoured as grants shrink
    const wanted = Math.max(0, request.hold);
    const count = grow ? Math.min(Math.max(own, wanted), room) : Math.min(own, wanted, room);
    if (count > 0) this.#grants.set(request.isolate, { count, expiresAt: now + request.ttlMs });
    else this.#grants.delete(request.isolate);
    return { granted: count, unclaimed: Math.max(0, request.limit - others - count), acked: 0 };
  }

  #sweep(now: number): void {
    for (const [isolate, g] of this.#grants) if (g.expiresAt <= now) this.#grants.delete(isolate);
  }
}
