import type { Ticket, WaitingPriority } from "../../core/pool/wait-queue";
import { FairQueue } from "../../core/pool/wait-queue";

/** How a wait ended: offered a try at capacity, past its TTL, or the client left. */
export type TurnResult = "woken" | "expired" | "gone";

/**
 * How often a waiting request looks whether it has been given a turn. A turn given waits
 * at most this long to be taken — nothing beside an LLM request's seconds — and each look
 * reads one flag. A waiter cannot be woken directly: the request that frees a slot runs in
 * its own request context, and workerd binds what a request's code does (its fetches, its
 * response) to the context its code resumed in, so a waiter resumed by another request's
 * promise resolution sends its call from the wrong request and never answers (found in
 * the fair-queue integration tests). Each waiter therefore resumes on its own timer.
 */
export const TURN_POLL_MS = 20;

/**
 * One pool's waiting requests in one isolate: the fair queue (./wait-queue.ts) plus who
 * gets a turn when. Capacity is offered to one waiter at a time — the one fair order
 * names — and only when it may have freed (this isolate released a lease, or the view
 * refreshed). The waiter given the turn re-runs its pick and admission: admitted, it
 * leases and passes the offer on to the next; refused, it goes back to its place and the
 * offers stop until the next release or view. So a release wakes one request, never the
 * whole queue. Each waiter holds one timer at a time (a TURN_POLL_MS slice of its TTL).
 */
export class WaitRoom {
  #queue: FairQueue<Waiter>;
  /** The waiter given a turn and deciding; no other is given one meanwhile. */
  #trial: Ticket<Waiter> | null = null;
  /** Capacity may have freed during the trial: offer again if it is refused. */
  #offerAgain = false;

  constructor(
    maxWaiting: number,
    private readonly pollMs = TURN_POLL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.#queue = new FairQueue(maxWaiting);
  }

  set maxWaiting(n: number) {
    this.#queue.maxWaiting = n; // lowering it keeps those already waiting
  }

  /** Requests waiting, the one on its turn included. */
  get size(): number {
    return this.#queue.size + (this.#trial === null ? 0 : 1);
  }

  /** A request that a waiter of its class or higher is ahead of: it queues too, even if the pool has room. */
  mustWait(priority: WaitingPriority): boolean {
    return this.#queue.hasAtOrAbove(priority) || (this.#trial !== null && rank(this.#trial.priority) >= rank(priority));
  }

  /**
   * Queues a request; null when the queue is full. The wait ends on its own at the TTL or
   * when `signal` aborts while waiting; the caller ends it otherwise (`admitted`, `leave`),
   * and must end every place it joined.
   */
  join(input: { tenant: string; priority: WaitingPriority; ttlMs: number; signal: AbortSignal | undefined }): Place | null {
    if (this.size >= this.#queue.maxWaiting) return null; // the one on its turn still holds its place
    const waiter = new Waiter();
    const ticket = this.#queue.push(input.tenant, input.priority, waiter, this.now() + input.ttlMs);
    if (!ticket) return null;
    const onGone = () => {
      if (this.#queue.remove(ticket)) waiter.give("gone");
      else if (this.#trial === ticket) {
        // Gone on its turn: workerd may never resume a departed client's handler, so the turn passes on now.
        this.#trial = null;
        waiter.give("gone");
        this.offer();
      }
    };
    input.signal?.addEventListener("abort", onGone);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      input.signal?.removeEventListener("abort", onGone);
      this.#queue.remove(ticket);
      if (this.#trial === ticket) this.#trial = null;
    };
    const expired = () => this.now() >= ticket.deadline;
    return {
      turn: async () => {
        for (;;) {
          const given = waiter.take();
          if (given !== null) return given;
          if (ended) return "gone"; // left meanwhile: stop looking
          if (expired() && this.#queue.remove(ticket)) return "expired";
          await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(this.pollMs, ticket.deadline - this.now()))));
        }
      },
      expired,
      admitted: () => {
        end();
        this.offer(); // there may be room for the next one too
      },
      refused: () => {
        if (this.#trial !== ticket) return waiter.give("gone"); // its turn was taken back (client gone)
        this.#trial = null;
        this.#queue.putBack(ticket);
        if (this.#offerAgain) this.offer();
      },
      leave: () => {
        const wasTrial = this.#trial === ticket;
        end();
        if (wasTrial) this.offer(); // the capacity it was offered is still free
      },
    };
  }

  /** Capacity may have freed: give the next waiter in fair order a turn (unless one is already deciding). */
  offer(): void {
    if (this.#trial !== null) {
      this.#offerAgain = true;
      return;
    }
    this.#offerAgain = false;
    const ticket = this.#queue.next();
    if (!ticket) return;
    this.#trial = ticket;
    ticket.value.give("woken");
  }
}

/** A request's place in a WaitRoom. */
export interface Place {
  /** Resolves when it is this request's turn to try, or its wait is over (TTL, client gone). */
  turn(): Promise<TurnResult>;
  /** Past its TTL. */
  expired(): boolean;
  /** Admitted on its turn: leaves the room and offers the next waiter a turn. Call once leased. */
  admitted(): void;
  /** Refused on its turn: back to the head of its tenant's line. */
  refused(): void;
  /** Leaves without being admitted (TTL, client gone); a turn it held goes to the next. */
  leave(): void;
}

/** A flag the waiter reads on its own timer: set by whoever gives the turn, in whatever request. */
class Waiter {
  #given: TurnResult | null = null;

  give(result: TurnResult): void {
    this.#given = result;
  }

  take(): TurnResult | null {
    const given = this.#given;
    this.#given = null;
    return given;
  }
}

const rank = (p: WaitingPriority) => (p === "standard" ? 1 : 0);
