import type { Priority } from "../config/schema";
import { DEFAULT_TENANT_QUEUE_SHARE } from "../config/schema";

/**
 * Fair order for requests that wait for a pool's capacity (`queue` in a pool's config).
 * Pure: no platform, no clock of its own (deadlines are compared with the `now` passed in).
 *
 * - Higher priority first: critical, then standard, then sheddable. Critical requests are
 *   never shed, but a replica's hard cap (max_ongoing_requests) holds them too: at the
 *   cap they wait here, first in line.
 * - Within a priority, round robin across tenants: each tenant has its own line, and the
 *   lines take turns, one request a turn. A tenant with 100 waiting and one with 1: the
 *   second is served within two turns, not after the hundred.
 * - A waiter taken for a try and refused again goes back with `putBack`: to the head of its
 *   tenant's line, and its tenant to the front of the turn order, so it loses no place.
 * - Bounded: at most `maxWaiting` tickets, and at most `maxPerTenant` of one tenant (all
 *   classes together), so one client cannot fill the queue; `push` past either returns null.
 */
export type WaitingPriority = Priority;

export interface Ticket<T> {
  readonly tenant: string;
  readonly priority: WaitingPriority;
  /** Time (in the caller's clock) past which the ticket has waited too long. */
  readonly deadline: number;
  readonly value: T;
}

const ORDER: readonly WaitingPriority[] = ["critical", "standard", "sheddable"]; // served first to last

export class FairQueue<T> {
  /** Per priority: tenant → its line, oldest first. The Map's order is the turn order. */
  #classes = new Map<WaitingPriority, Map<string, Ticket<T>[]>>(ORDER.map((p) => [p, new Map()]));
  #size = 0;
  /** Tickets waiting per tenant, every class together. */
  #perTenant = new Map<string, number>();

  constructor(
    public maxWaiting: number,
    public maxPerTenant: number = maxWaiting,
  ) {}

  /** Tickets of `tenant` waiting now. */
  waitingOf(tenant: string): number {
    return this.#perTenant.get(tenant) ?? 0;
  }

  get size(): number {
    return this.#size;
  }

  /** Joins the end of its tenant's line (a new tenant takes its turn after those waiting); null when full, or its tenant's share is. */
  push(tenant: string, priority: WaitingPriority, value: T, deadline: number): Ticket<T> | null {
    if (this.#size >= this.maxWaiting || this.waitingOf(tenant) >= this.maxPerTenant) return null;
    const ticket: Ticket<T> = { tenant, priority, deadline, value };
    const lines = this.#classes.get(priority)!;
    const line = lines.get(tenant);
    if (line) line.push(ticket);
    else lines.set(tenant, [ticket]);
    this.#count(tenant, +1);
    return ticket;
  }

  /** The ticket fair order serves next, without taking it. */
  peek(): Ticket<T> | null {
    for (const p of ORDER) {
      const first = this.#classes.get(p)!.values().next();
      if (!first.done) return first.value[0]!;
    }
    return null;
  }

  /** Takes the next ticket: the head of the highest class's tenant whose turn it is; that tenant's turn passes. Classes in `skip` are passed over. */
  next(skip?: ReadonlySet<WaitingPriority>): Ticket<T> | null {
    for (const p of ORDER) {
      if (skip?.has(p)) continue;
      const lines = this.#classes.get(p)!;
      const first = lines.entries().next();
      if (first.done) continue;
      const [tenant, line] = first.value;
      const ticket = line.shift()!;
      lines.delete(tenant);
      if (line.length > 0) lines.set(tenant, line); // to the back of the turn order
      this.#count(tenant, -1);
      return ticket;
    }
    return null;
  }

  /**
   * Returns a ticket taken by `next` that was refused again: head of its tenant's line,
   * its tenant first in turn. Not bounded by maxWaiting: it held its place already.
   */
  putBack(ticket: Ticket<T>): void {
    const lines = this.#classes.get(ticket.priority)!;
    const line = lines.get(ticket.tenant) ?? [];
    line.unshift(ticket);
    const rest = [...lines].filter(([tenant]) => tenant !== ticket.tenant);
    this.#classes.set(ticket.priority, new Map([[ticket.tenant, line], ...rest]));
    this.#count(ticket.tenant, +1);
  }

  /** Takes a ticket out wherever it is (its client left); false when it was not waiting. */
  remove(ticket: Ticket<T>): boolean {
    const lines = this.#classes.get(ticket.priority)!;
    const line = lines.get(ticket.tenant);
    const at = line ? line.indexOf(ticket) : -1;
    if (at < 0) return false;
    line!.splice(at, 1);
    if (line!.length === 0) lines.delete(ticket.tenant);
    this.#count(ticket.tenant, -1);
    return true;
  }

  #count(tenant: string, delta: number): void {
    this.#size += delta;
    const n = this.waitingOf(tenant) + delta;
    if (n > 0) this.#perTenant.set(tenant, n);
    else this.#perTenant.delete(tenant);
  }

  /** Takes out and returns every ticket whose deadline is at or before `now`. */
  expire(now: number): Ticket<T>[] {
    const expired: Ticket<T>[] = [];
    for (const lines of this.#classes.values()) {
      for (const line of lines.values()) for (const t of line) if (t.deadline <= now) expired.push(t);
    }
    for (const t of expired) this.remove(t);
    return expired;
  }
}

/** Tickets one tenant may hold: `perTenant` when configured, else the default share of maxWaiting (at least 1). */
export function tenantShare(maxWaiting: number, perTenant: number | undefined): number {
  return perTenant ?? Math.max(1, Math.ceil(maxWaiting * DEFAULT_TENANT_QUEUE_SHARE));
}
