import type { RandomSource } from "../../../lib/random";
import type { Picker } from "../plugin";
import type { Candidate, PickReason } from "../scoring/types";

/** A replica as a lease picker sees it: no labels, no metrics. */
export type Leased = Pick<Candidate, "id" | "weight" | "inflight">;

/**
 * A full fallback order from weights and leases alone: [0] is the choice, the rest are
 * fallbacks. Weight <= 0 (or NaN) is excluded entirely. Never mutates its input. All
 * randomness comes from `random`, so a scripted source pins the outcome in tests.
 */
export type LeaseOrder = <T extends Leased>(candidates: readonly T[], random: RandomSource) => T[];

/** A picker that orders by weights and leases alone: a pool whose profile has only such plugins does not read its requests. */
export function leasePicker(order: LeaseOrder, reason: PickReason): Picker {
  return { sees: "leases", pick: ({ input, kept }) => ({ order: order(kept, input.random), reason }) };
}
