import type { SlotGrant, SlotRequest } from "./wire";

/**
 * The grants of one concurrency subscription as a pure machine: isolate → {count,
 * expiresAt}. Grants never add up past the limit an isolate states; a lowered limit is
 * honoured as grants shrink (an isolate keeps what it holds until its next sync, which
 * gives back the excess); a grant not renewed within its ttl is freed. Time is an
 * argument. The object (src/platform/objects/concurrency-slots.ts) is its RPC surface and
 * stores nothing.
 */
export class SlotGrants {
  #grants = new Map<string, { count: number; expiresAt: number }>();

  /** Grows (never shrinks) an isolate's grant toward `hold`, as far as free slots allow. */
  acquire(request: SlotRequest, now: number): SlotGrant {
    return this.#set(request, true, now);
  }

  /** Renews an isolate's grant and sets it to `hold` when that is less (slots given back). */
  sync(request: SlotRequest, now: number): SlotGrant {
    return this.#set(request, false, now);
  }

  /** Slots held in total, and by how many isolates. */
  snapshot(now: number): { granted: number; isolates: number } {
    this.#sweep(now);
    let granted = 0;
    for (const g of this.#grants.values()) granted += g.count;
    return { granted, isolates: this.#grants.size };
  }

  #set(request: SlotRequest, grow: boolean, now: number): SlotGrant {
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
