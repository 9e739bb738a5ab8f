import type { Ticket, WaitingPriority } from "../../core/pool/wait-queue";
import { FairQueue } from "../../core/pool/wait-queue";

/** How a wait ended: admitted (a slot is held for it), past its TTL, or the client left. */
export type TurnResult = "admitted" | "expired" | "gone";

/**
 * A waiter's admission, tried by whoever frees capacity, in their own request: synchronous
 * and without I/O (the isolate's view and leases only). Admitted, it has taken a slot for
 * the waiter and returns how to give it back; refused, it says whether only its class is
 * full (the pool's critical share: the next class may still go) or the pool is.
 */
export type Probe = () => { admitted: true; undo: () => void } | { admitted: false; classFull: boolean };

/**
 * How often a waiter looks whether it was admitted. Admission itself is event-driven: the
 * request that frees a slot (a lease released, a view showing other isolates' releases)
 * runs the next waiters' probes at once and takes the slots for them, as many as are
 * free, so no arrival can take them meanwhile. Only the waiter's pick-up is on its own
 * timer: the request that frees a slot runs in its own request context, and workerd binds
 * what a request's code does (its fetches, its response) to the context its code resumed
 * in, so a waiter resumed by another request's promise resolution sends its call from
 * the wrong request (tried again for issue 15: with `handle_cross_request_promise_resolution`
 * on, the fair-queue integration tests still fail with "Cannot perform I/O on behalf of a
 * different request" and cancelled upstream fetches). A slot held for a waiter is at most
 * this long idle; each look reads one flag.
 */
export const TURN_POLL_MS = 5;

/** What the room has done since the isolate started (for /routing and tests). */
export interface RoomCounts {
  /** Requests that joined the queue (every one waited). */
  joined: number;
  /** Waiters admitted by a probe, at the moment capacity freed. */
  admitted: number;
  /** Requests refused a place: the queue or their tenant's share was full. */
  full: number;
}

/**
 * One pool's waiting requests in one isolate: the fair queue (./wait-queue.ts) plus who
 * is admitted when. Whenever capacity may have freed (this isolate released a lease, a
 * view refreshed, a waiter gave its slot back) `offer` runs the probes of the waiters in
 * fair order and admits every one that fits, stopping at the first the pool refuses; a
 * waiter refused only because its class is full (critical share) lets the classes below
 * it go. A new request runs `offer` first, so waiters that can use a free slot get it
 * before the newcomer, and one that finds a slot left goes straight through.
 */
export class WaitRoom {
  #queue: FairQueue<Waiter>;
  #counts: RoomCounts = { joined: 0, admitted: 0, full: 0 };

  constructor(
    maxWaiting: number,
    maxPerTenant: number = maxWaiting,
    private readonly pollMs = TURN_POLL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.#queue = new FairQueue(maxWaiting, maxPerTenant);
  }

  /** New bounds (a new config); lowering them keeps those already waiting. */
  limit(maxWaiting: number, maxPerTenant: number): void {
    this.#queue.maxWaiting = maxWaiting;
    this.#queue.maxPerTenant = maxPerTenant;
  }

  /** Requests waiting and not yet admitted. */
  get size(): number {
    return this.#queue.size;
  }

  get counts(): Readonly<RoomCounts> {
    return this.#counts;
  }

  /**
   * Queues a request; null when the queue or its tenant's share is full. The wait ends on
   * its own at the TTL or when `signal` aborts; the caller ends it otherwise (`done`,
   * `leave`), and must end every place it joined.
   */
  join(input: { tenant: string; priority: WaitingPriority; ttlMs: number; signal: AbortSignal | undefined; probe: Probe }): Place | null {
    const waiter = new Waiter(input.probe);
    const ticket = this.#queue.push(input.tenant, input.priority, waiter, this.now() + input.ttlMs);
    if (!ticket) {
      this.#counts.full++;
      return null;
    }
    this.#counts.joined++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      input.signal?.removeEventListener("abort", onGone);
      this.#queue.remove(ticket);
      const held = waiter.undo;
      waiter.undo = null;
      if (held) {
        held(); // the slot taken for it goes to the next waiter
        this.offer();
      }
    };
    // workerd may never resume a departed client's handler: whatever it holds is given back now.
    const onGone = () => {
      waiter.give("gone");
      end();
    };
    input.signal?.addEventListener("abort", onGone);
    const expired = () => this.now() >= ticket.deadline;
    return {
      turn: async () => {
        for (;;) {
          const given = waiter.take();
          if (given !== null) return given;
          if (ended) return "gone";
          if (expired() && this.#queue.remove(ticket)) return "expired";
          await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(this.pollMs, ticket.deadline - this.now()))));
        }
      },
      expired,
      unhold: () => {
        const held = waiter.undo;
        waiter.undo = null;
        held?.();
      },
      refused: () => {
        if (ended) return;
        this.#queue.putBack(ticket);
        this.offer(); // what it gave back may fit the next one
      },
      done: () => {
        end();
      },
      leave: () => {
        end();
      },
    };
  }

  /**
   * Capacity may have freed: admits waiters in fair order while their probes admit them,
   * each at once (its slot taken now, its request picks it up on its next look). Returns
   * how many were admitted.
   */
  offer(): number {
    const skip = new Set<WaitingPriority>();
    const now = this.now();
    let admitted = 0;
    for (;;) {
      const ticket = this.#queue.next(skip);
      if (!ticket) break;
      if (ticket.deadline <= now) {
        ticket.value.give("expired"); // too late to spend a slot on
        continue;
      }
      const verdict = ticket.value.probe();
      if (verdict.admitted) {
        ticket.value.undo = verdict.undo;
        ticket.value.give("admitted");
        admitted++;
        continue;
      }
      this.#queue.putBack(ticket);
      if (!verdict.classFull) break;
      skip.add(ticket.priority);
    }
    this.#counts.admitted += admitted;
    return admitted;
  }
}

/** A request's place in a WaitRoom. */
export interface Place {
  /** Resolves when this request was admitted (a slot is held for it), or its wait is over (TTL, client gone). */
  turn(): Promise<TurnResult>;
  /** Past its TTL. */
  expired(): boolean;
  /** Gives back the slot held for it, just before its own pick takes one (so the pick sees it free). */
  unhold(): void;
  /** Its own pick refused it after all: back to the head of its tenant's line. */
  refused(): void;
  /** Leased by its own pick: leaves the room. */
  done(): void;
  /** Leaves without being served (TTL, client gone, error); a slot held for it goes to the next. */
  leave(): void;
}

/** A flag the waiter reads on its own timer: set by whoever admits it, in whatever request. */
class Waiter {
  #given: TurnResult | null = null;
  /** Gives back the slot taken for it by its probe, until its request takes it over. */
  undo: (() => void) | null = null;

  constructor(readonly probe: Probe) {}

  give(result: TurnResult): void {
    this.#given = result;
  }

  take(): TurnResult | null {
    const given = this.#given;
    this.#given = null;
    return given;
  }
}
