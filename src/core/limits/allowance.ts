import { AppliedLedger } from "../state/applied-ledger";
import { windowAt } from "./windows";
import type { BucketLimits, Dimension, DimensionGrant, LimitAnswer, LimitCounters, LimitSnapshot, LimitSync } from "./wire";
import { DIMENSIONS } from "./wire";

/** One dimension of a bucket in its current window: what was spent, and what each isolate holds unspent. */
interface DimState {
  kind: string;
  window: number;
  endsAt: number;
  spent: number;
  grants: Map<string, { amount: number; expiresAt: number }>;
  /** The window this one took over when the config changed the window or its reset date: use reported for it still counts. */
  from?: number;
}

/** As stored: the limits last told, and each dimension's window, spend and grants. */
export interface AllowanceState {
  limits: BucketLimits;
  dims: Partial<Record<Dimension, { kind: string; window: number; endsAt: number; spent: number; grants: [isolate: string, amount: number, expiresAt: number][]; from?: number }>>;
  /** Absent in state stored before counters were kept: they start at 0. */
  counters?: LimitCounters;
}

/**
 * The allowance of one limit bucket (a key, team or model scope) as a pure machine, run by
 * its Durable Object (src/platform/objects/principal-limits.ts). Per dimension and window:
 * the total, what isolates reported spent, and grants — slices of what is left that each
 * isolate holds and spends from locally. The invariant: spent plus every grant never
 * exceeds the total, so isolates spending only from their grants never spend past it
 * together; only a settled use larger than its reservation (a token estimate that ran
 * short) adds to spent beyond a grant, and that is the overshoot (docs/limits.md).
 *
 * - A sync's usage (batches, each applied once by the ledger) moves from the isolate's
 *   grant into spent; usage reported for a window that has ended counts nowhere.
 * - A sync states the grant the isolate wants to hold from now (absolute, so a resend asks
 *   the same); it gets as much of it as the others' grants and spent leave. Asking for less
 *   gives the rest back.
 * - A grant not renewed within its ttl returns (a vanished isolate's allowance comes back).
 * - On rollover spent and grants start afresh.
 * - A live limit change keeps what was spent: a lower total shrinks grants as they renew;
 *   a changed window or reset date carries the running window's spend into the new one.
 */
export class Allowance {
  readonly ledger = new AppliedLedger();
  #limits: BucketLimits = {};
  #dims = new Map<Dimension, DimState>();
  #counters: LimitCounters = { requests: 0, tokens: 0, spend: 0, refusals: {} };

  restore(state: AllowanceState | null): void {
    if (!state) return;
    this.#limits = state.limits;
    if (state.counters) this.#counters = structuredClone(state.counters);
    for (const dim of DIMENSIONS) {
      const d = state.dims[dim];
      if (d) this.#dims.set(dim, { kind: d.kind, window: d.window, endsAt: d.endsAt, spent: d.spent, grants: new Map(d.grants.map(([isolate, amount, expiresAt]) => [isolate, { amount, expiresAt }])), ...(d.from !== undefined && { from: d.from }) });
    }
  }

  get state(): AllowanceState {
    const dims: AllowanceState["dims"] = {};
    for (const [dim, d] of this.#dims) dims[dim] = { kind: d.kind, window: d.window, endsAt: d.endsAt, spent: d.spent, grants: [...d.grants].map(([isolate, g]) => [isolate, g.amount, g.expiresAt]), ...(d.from !== undefined && { from: d.from }) };
    return { limits: this.#limits, dims, counters: this.#counters };
  }

  sync(request: LimitSync, now: number): LimitAnswer {
    this.#limits = request.limits;
    this.#roll(now);
    for (const batch of this.ledger.accept(request.isolate, request.batches, now)) {
      for (const [dim, n] of Object.entries(batch.refusals ?? {}) as [Dimension, number][]) {
        if (n > 0) this.#counters.refusals[dim] = (this.#counters.refusals[dim] ?? 0) + n;
      }
      const estimated = batch.estimatedTokens;
      if (typeof estimated === "number" && Number.isFinite(estimated) && estimated > 0) this.#counters.estimatedTokens = (this.#counters.estimatedTokens ?? 0) + estimated;
      for (const item of batch.usage) {
        // The counters take every window's use, and dimensions not limited here, as it happened.
        if (item.amount > 0 && item.dim !== "concurrent") this.#counters[item.dim] += item.amount;
        const d = this.#dims.get(item.dim);
        if (!d || (item.window !== d.window && item.window !== d.from) || !(item.amount > 0)) continue; // another window's use was paid from that window's grants
        d.spent += item.amount;
        const own = d.grants.get(request.isolate);
        if (own) own.amount = Math.max(0, own.amount - item.amount);
      }
    }
    const dims: LimitAnswer["dims"] = {};
    for (const [dim, d] of this.#dims) {
      const total = this.#limits[dim]!.total;
      let others = 0;
      for (const [isolate, g] of d.grants) if (isolate !== request.isolate) others += g.amount;
      const room = Math.max(0, total - d.spent - others); // a lowered total is honoured as grants renew
      const granted = Math.min(Math.max(0, request.hold[dim] ?? 0), room);
      if (granted > 0) d.grants.set(request.isolate, { amount: granted, expiresAt: now + request.ttlMs });
      else d.grants.delete(request.isolate);
      dims[dim] = grantOf(total, d, granted, Math.max(0, room - granted));
    }
    return { acked: this.ledger.applied(request.isolate), dims, expiresAt: now + request.ttlMs };
  }

  snapshot(now: number): LimitSnapshot {
    this.#roll(now);
    const dims: LimitSnapshot["dims"] = {};
    for (const [dim, d] of this.#dims) {
      let granted = 0;
      for (const g of d.grants.values()) granted += g.amount;
      dims[dim] = { total: this.#limits[dim]!.total, window: d.window, spent: d.spent, granted, isolates: d.grants.size };
    }
    return { dims, counters: structuredClone(this.#counters) };
  }

  /** Windows rolled over, expired grants returned, dimensions no longer limited dropped. */
  #roll(now: number): void {
    for (const dim of [...this.#dims.keys()]) if (this.#limits[dim] === undefined) this.#dims.delete(dim);
    for (const dim of DIMENSIONS) {
      const limit = this.#limits[dim];
      if (!limit) continue;
      const w = windowAt(limit.window, now, limit.resetAt);
      const kind = `${limit.window}:${limit.resetAt ?? ""}`;
      const d = this.#dims.get(dim);
      // A new window of the same kind starts afresh. When the config changes the kind or a
      // reset date, what was spent in the window then running carries into the new window
      // (a trial budget's end moved later; a month made a day: the limit errs toward
      // holding), which then rolls over as any does; a window already ended carries nothing.
      if (!d || (d.kind === kind ? d.window !== w.id : d.endsAt <= now)) {
        this.#dims.set(dim, { kind, window: w.id, endsAt: w.endsAt, spent: 0, grants: new Map() });
        continue;
      }
      if (d.kind !== kind) {
        this.#dims.set(dim, { kind, window: w.id, endsAt: w.endsAt, spent: d.spent, grants: d.grants, from: d.window });
        continue;
      }
      for (const [isolate, g] of d.grants) if (g.expiresAt <= now) d.grants.delete(isolate);
    }
  }
}

function grantOf(total: number, d: DimState, granted: number, free: number): DimensionGrant {
  return { total, window: d.window, endsAt: d.endsAt, granted, free, spent: d.spent };
}
