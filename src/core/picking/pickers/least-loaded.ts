import { ascendingWithRandomTies } from "../random-ties";
import type { LeaseOrder } from "./lease";
import { leasePicker } from "./lease";

/**
 * Fewest in-flight requests relative to capacity: `inflight / weight`, so a weight-2
 * replica is as "loaded" with 4 requests as a weight-1 replica with 2. With equal
 * weights this is plain least-in-flight. Fallbacks continue in the same order.
 */
export const leastLoaded: LeaseOrder = (candidates, random) =>
  ascendingWithRandomTies(
    candidates.filter((c) => c.weight > 0),
    (c) => c.inflight / c.weight,
    random,
  );

export const leastLoadedPicker = leasePicker(leastLoaded, "least_loaded");
