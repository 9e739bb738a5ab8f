import { DurableObject } from "cloudflare:workers";
import { SlotGrants } from "../../core/routewise/slot-grants";
import type { SlotGrant, SlotRequest, SlotSync } from "../../core/routewise/wire";
import { clock } from "./clock";

/**
 * The parallel slots of one concurrency subscription (`slots:<concurrency_pool or
 * model/route>`), leased to isolates: the RPC surface of SlotGrants
 * (src/core/routewise/slot-grants.ts), which holds the grant arithmetic. An isolate
 * holds a grant of slots and uses them with no call per request
 * (src/app/state/routewise/slot-agent.ts); it asks for one more only when all it holds
 * are busy, and gives back what it has not needed lately on its next sync. Grants never
 * add up past the limit, so the provider never sees more requests at once than it
 * allows, whatever the number of isolates.
 *
 * Storage: none. Memory only, by design: grants isolate → {count, expiresAt}. A grant
 * not renewed within its ttl is freed, so slots of a vanished isolate (or of a restarted
 * object, whose isolates re-ask) come back by themselves.
 *
 * Delivery: a sync rides the shared-state protocol but carries no batches. Every
 * request states the grant it wants absolutely (`hold`), so one applied whose answer
 * was lost and sent again sets the same grant: idempotent by nature, nothing to dedupe
 * (the answer's `acked` is always 0).
 */
export class ConcurrencySlots extends DurableObject {
  #grants = new SlotGrants();

  /** Grows (never shrinks) an isolate's grant toward `hold`, as far as free slots allow. */
  async acquire(request: SlotRequest): Promise<SlotGrant> {
    return this.#grants.acquire(request, clock.now());
  }

  /** Renews an isolate's grant and sets it to `hold` when that is less (slots given back). */
  async sync(request: SlotSync): Promise<SlotGrant> {
    return this.#grants.sync(request, clock.now());
  }

  async snapshot(): Promise<{ granted: number; isolates: number }> {
    return this.#grants.snapshot(clock.now());
  }
}
