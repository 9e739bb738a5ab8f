import type { CircuitPolicy, CircuitState, Transition } from "../health/circuit";
import { admit, DEFAULT_CIRCUIT_POLICY, newCircuit, peek, record } from "../health/circuit";
import type { RouteVerdict } from "./wire";

/**
 * A provider route's circuit follows the same machine as a replica's, with a pool's
 * `circuit:` defaults: 5 failures in a row, or half of at least 10 tries over a minute,
 * open it for 30 s, doubling to 300 s while it keeps failing.
 */
export const ROUTE_CIRCUIT_POLICY: CircuitPolicy = DEFAULT_CIRCUIT_POLICY;

const CLOSED = newCircuit();

/** Whether a route may be chosen now: closed, or open past its cooldown (the next verdict decides). */
export function routeAvailable(circuit: CircuitState | undefined, now: number, policy: CircuitPolicy = ROUTE_CIRCUIT_POLICY): boolean {
  return peek(circuit ?? CLOSED, now, policy) !== "no";
}

export interface RouteTransition {
  route: string;
  transition: Transition;
}

/**
 * Folds verdicts into the routes' circuits, in the order given; the isolates and the
 * envelope object run the same fold, so an isolate's own verdicts count at once and
 * every isolate converges on the object's answer. RouteWise has no awaited probe
 * admission (a pool's half-open probe costs a call to its object): a route's circuit open
 * past its cooldown takes the first verdict that arrives as its probe, which closes it
 * or opens it again with the doubled cooldown. Verdicts of routes not in `routes` are
 * dropped (the route left the config).
 */
export function foldVerdicts(
  circuits: ReadonlyMap<string, CircuitState>,
  verdicts: readonly RouteVerdict[],
  routes: ReadonlySet<string> | null,
  policy: CircuitPolicy = ROUTE_CIRCUIT_POLICY,
): { changed: Map<string, CircuitState>; transitions: RouteTransition[] } {
  const changed = new Map<string, CircuitState>();
  const transitions: RouteTransition[] = [];
  for (const v of verdicts) {
    if (routes && !routes.has(v.route)) continue;
    let state = changed.get(v.route) ?? circuits.get(v.route) ?? CLOSED;
    let probe = false;
    if (state.phase !== "closed") {
      const admitted = admit(state, v.at, policy);
      if (admitted.admission === "probe") {
        probe = true;
        state = admitted.state;
        if (admitted.transition) transitions.push({ route: v.route, transition: admitted.transition });
      }
    }
    const step = record(state, v.ok ? "success" : "failure", v.at, policy, probe);
    if (step.transition) transitions.push({ route: v.route, transition: step.transition });
    if (step.state !== (changed.get(v.route) ?? circuits.get(v.route))) changed.set(v.route, step.state);
  }
  return { changed, transitions };
}
