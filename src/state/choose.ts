import type { CircuitState, Transition } from "../routing/circuit";
import { admit, newCircuit, peek, record, releaseProbe } from "../routing/circuit";
import { POLICIES } from "../routing/policies";
import type { RandomSource } from "../routing/random";
import type { AcquireResult, FinishReport, PoolSpec } from "./types";

export interface ReplicaTransition {
  replica: string;
  transition: Transition;
}

export interface ChooseInput {
  spec: PoolSpec;
  circuits: ReadonlyMap<string, CircuitState>;
  inflight: (replica: string) => number;
  pinned: string | null;
  forced: string | null;
  random: RandomSource;
  now: number;
}

export interface ChooseOutput extends Omit<AcquireResult, "leaseId"> {
  /** Circuits whose state changed (admission of a probe, open → half_open). */
  changed: Map<string, CircuitState>;
  transitions: ReplicaTransition[];
}

/**
 * One routing decision for a pool. Circuits filter, the policy orders, a live pin goes
 * first. Only the first choice is admitted (it may be a half-open probe); fallbacks are
 * limited to closed circuits so one request never spends two probes. With every circuit
 * open, a fail-open pool routes as if there were no circuits; otherwise the order is empty.
 */
export function choose(input: ChooseInput): ChooseOutput {
  const { spec, now } = input;
  const changed = new Map<string, CircuitState>();
  const transitions: ReplicaTransition[] = [];
  const circuitOf = (id: string) => changed.get(id) ?? input.circuits.get(id) ?? newCircuit();

  if (input.forced !== null) {
    const known = spec.replicas.some((r) => r.id === input.forced);
    return { order: known ? [input.forced] : [], probe: false, pinnedAllowed: null, failedOpen: false, changed, transitions };
  }

  const eligible = spec.replicas.filter((r) => r.weight > 0);
  const candidates = eligible
    .filter((r) => peek(circuitOf(r.id), now, spec.circuit) !== "no")
    .map((r) => ({ id: r.id, weight: r.weight, inflight: input.inflight(r.id) }));
  let ordered = POLICIES[spec.policy](candidates, input.random).map((c) => c.id);

  const pinnedAllowed = input.pinned === null ? null : ordered.includes(input.pinned);
  if (input.pinned !== null && pinnedAllowed) ordered = [input.pinned, ...ordered.filter((id) => id !== input.pinned)];

  const order: string[] = [];
  let probe = false;
  for (const id of ordered) {
    if (order.length === 0) {
      const admission = admit(circuitOf(id), now, spec.circuit);
      if (admission.transition) transitions.push({ replica: id, transition: admission.transition });
      if (admission.state !== circuitOf(id)) changed.set(id, admission.state);
      if (admission.admission === "no") continue;
      probe = admission.admission === "probe";
      order.push(id);
    } else if (peek(circuitOf(id), now, spec.circuit) === "yes") {
      order.push(id);
    }
  }

  if (order.length === 0 && spec.failOpen && eligible.length > 0) {
    const all = eligible.map((r) => ({ id: r.id, weight: r.weight, inflight: input.inflight(r.id) }));
    return { order: POLICIES[spec.policy](all, input.random).map((c) => c.id), probe: false, pinnedAllowed, failedOpen: true, changed, transitions };
  }
  return { order, probe, pinnedAllowed, failedOpen: false, changed, transitions };
}

/** Feeds a finished request's attempts into the circuits. Neutral outcomes only free a probe slot. */
export function applyFinish(
  circuits: ReadonlyMap<string, CircuitState>,
  report: FinishReport,
  spec: PoolSpec,
  now: number,
): { changed: Map<string, CircuitState>; transitions: ReplicaTransition[] } {
  const changed = new Map<string, CircuitState>();
  const transitions: ReplicaTransition[] = [];
  report.attempts.forEach((attempt, i) => {
    const known = spec.replicas.some((r) => r.id === attempt.replica);
    if (!known) return; // replica left the config meanwhile
    const before = changed.get(attempt.replica) ?? circuits.get(attempt.replica) ?? newCircuit();
    const wasProbe = i === 0 && report.probe;
    if (attempt.verdict === "neutral") {
      if (wasProbe) changed.set(attempt.replica, releaseProbe(before));
      return;
    }
    const result = record(before, attempt.verdict, now, spec.circuit, wasProbe);
    changed.set(attempt.replica, result.state);
    if (result.transition) transitions.push({ replica: attempt.replica, transition: result.transition });
  });
  return { changed, transitions };
}
