import { uniformInt } from "../../../lib/random";
import { ascendingWithRandomTies } from "../random-ties";
import type { LeaseOrder } from "./lease";
import { leasePicker } from "./lease";

/**
 * Power of two choices, Ray Serve's default router: sample two distinct replicas
 * uniformly, send to the one with fewer in-flight requests (tie: the first drawn).
 * Unlike least-loaded it does not pile onto one replica when counts are stale or shared
 * by many routers (Mitzenmacher 2000), yet it removes most of random's imbalance.
 * Weight only gates eligibility (weight <= 0 is drained); the draw itself is uniform.
 * Fallbacks: the other drawn replica, then the rest ascending by in-flight.
 */
export const powerOfTwo: LeaseOrder = (candidates, random) => {
  const eligible = candidates.filter((c) => c.weight > 0);
  const n = eligible.length;
  if (n <= 1) return eligible;

  // Two distinct indices, each pair equally likely: draw j from the n-1 slots that are
  // not i and shift it past i.
  const i = uniformInt(random, n);
  let j = uniformInt(random, n - 1);
  if (j >= i) j++;
  const first = eligible[i]!;
  const second = eligible[j]!;
  const drawn = second.inflight < first.inflight ? [second, first] : [first, second];

  const rest = eligible.filter((_, k) => k !== i && k !== j);
  return [...drawn, ...ascendingWithRandomTies(rest, (c) => c.inflight, random)];
};

export const powerOfTwoPicker = leasePicker(powerOfTwo, "power_of_two");
