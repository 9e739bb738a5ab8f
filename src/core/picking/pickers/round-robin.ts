import type { Picker } from "../plugin";

/**
 * Round robin, as vLLM production-stack's `roundrobin`: replicas sorted by id (so every
 * router agrees on the ring whatever order config lists them in), starting at the cursor;
 * the cursor advances by one per pick and comes back in the result. Fallbacks follow the
 * ring. The cursor wraps by the current fleet size, so a fleet change shifts the ring once.
 *
 * It sees the view: the cursor is the pool's picker state, which the isolate hands over
 * with the request's view.
 */
export const roundRobinPicker: Picker = {
  sees: "view",
  pick: ({ input, kept }) => {
    const ring = [...kept].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const start = input.state.roundRobinCursor % ring.length;
    const order = [...ring.slice(start), ...ring.slice(0, start)];
    return { order, reason: "round_robin", state: { ...input.state, roundRobinCursor: (start + 1) % ring.length } };
  },
};
