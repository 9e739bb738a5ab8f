import { eligibleCandidates } from "../pipeline";
import type { ScoringPolicy } from "../types";
import { pickResult } from "./result";

/**
 * Round robin, as vLLM production-stack's `roundrobin`: replicas sorted by id (so every
 * router agrees on the ring whatever order config lists them in), starting at the cursor;
 * the cursor advances by one per pick and comes back in the result. Fallbacks follow the
 * ring. The cursor wraps by the current fleet size, so a fleet change shifts the ring once.
 */
export const roundRobinPolicy: ScoringPolicy = (input) => {
  const ring = eligibleCandidates(input.candidates).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (ring.length === 0) return pickResult(input, [], "none");
  const start = input.state.roundRobinCursor % ring.length;
  const order = [...ring.slice(start), ...ring.slice(0, start)];
  return pickResult(input, order, "round_robin", { ...input.state, roundRobinCursor: (start + 1) % ring.length });
};
