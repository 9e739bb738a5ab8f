import type { CircuitState, Transition } from "../routing/circuit";
import { newCircuit, peek, record, releaseProbe } from "../routing/circuit";
import { POLICIES } from "../routing/policies";
import type { RandomSource } from "../routing/random";
import type { OutcomeReport, PoolSpec } from "./types";

export interface ReplicaTransition {
  replica: string;
  transition: Transition;
}

export interface ChooseInput {
  spec: PoolSpec;
  circuits: ReadonlyMap<string, CircuitState>;
  /** Requests in flight on a replica, as this isolate knows it (every isolate's, its own exactly). */
  load: (replica: string) => number;
  pinned: string | null;
  forced: string | null;
  random: RandomSource;
  now: number;
}

export interface Choice {
  /** Replica ids in the order to try them; empty = nothing can take traffic. */
  order: string[];
  /** order[0] is past its cooldown and may only go as a half-open probe, once admitted. */
  probe: boolean;
  /** Whether the pinned replica may be used (null when nothing was pinned). */
  pinnedAllowed: boolean | null;
  /** Every circuit was open and the pool is fail-open: circuits were ignored. */
  failedOpen: boolean;
}

/**
 * One routing decision for a pool, from a view of its circuits and loads. Circuits
 * filter, the policy orders, a usable pin goes first. Only the first choice may be a
 * half-open probe; fallbacks are limited to closed circuits so one request never spends
 * two probes. With every circuit open, a fail-open pool routes as if there were no
 * circuits; otherwise the order is empty.
 */
export function choose(input: ChooseInput): Choice {
  const { spec, now } = input;
  const circuitOf = (id: string) => input.circuits.get(id) ?? CLOSED;

  if (input.forced !== null) {
    const known = spec.replicas.some((r) => r.id === input.forced);
    return { order: known ? [input.forced] : [], probe: false, pinnedAllowed: null, failedOpen: false };
  }

  const eligible = spec.replicas.filter((r) => r.weight > 0);
  const candidates = eligible
    .filter((r) => peek(circuitOf(r.id), now, spec.circuit) !== "no")
    .map((r) => ({ id: r.id, weight: r.weight, inflight: input.load(r.id) }));
  let ordered = POLICIES[spec.policy](candidates, input.random).map((c) => c.id);

  const pinnedAllowed = input.pinned === null ? null : ordered.includes(input.pinned);
  if (input.pinned !== null && pinnedAllowed) ordered = [input.pinned, ...ordered.filter((id) => id !== input.pinned)];

  const order: string[] = [];
  let probe = false;
  for (const id of ordered) {
    const admission = peek(circuitOf(id), now, spec.circuit);
    if (order.length === 0) {
      order.push(id);
      probe = admission === "probe";
    } else if (admission === "yes") {
      order.push(id);
    }
  }

  if (order.length === 0 && spec.failOpen && eligible.length > 0) {
    const all = eligible.map((r) => ({ id: r.id, weight: r.weight, inflight: input.load(r.id) }));
    return { order: POLICIES[spec.policy](all, input.random).map((c) => c.id), probe: false, pinnedAllowed, failedOpen: true };
  }
  return { order, probe, pinnedAllowed, failedOpen: false };
}

const CLOSED = newCircuit();

/**
 * Feeds outcomes into circuits, in the order given. `wasProbe` says whether an outcome
 * still holds a probe slot (its token is live); a neutral outcome only frees that slot.
 * Outcomes of replicas no longer in the spec are dropped.
 */
export function applyOutcomes(
  circuits: ReadonlyMap<string, CircuitState>,
  outcomes: readonly OutcomeReport[],
  spec: PoolSpec,
  wasProbe: (outcome: OutcomeReport) => boolean,
): { changed: Map<string, CircuitState>; transitions: ReplicaTransition[] } {
  const changed = new Map<string, CircuitState>();
  const transitions: ReplicaTransition[] = [];
  const known = new Set(spec.replicas.map((r) => r.id));
  for (const outcome of outcomes) {
    if (!known.has(outcome.replica)) continue; // replica left the config meanwhile
    const before = changed.get(outcome.replica) ?? circuits.get(outcome.replica) ?? CLOSED;
    const probe = wasProbe(outcome);
    if (outcome.verdict === "neutral") {
      if (probe) changed.set(outcome.replica, releaseProbe(before));
      continue;
    }
    const result = record(before, outcome.verdict, outcome.at, spec.circuit, probe);
    changed.set(outcome.replica, result.state);
    if (result.transition) transitions.push({ replica: outcome.replica, transition: result.transition });
  }
  return { changed, transitions };
}
