import type { CircuitState, Transition } from "../health/circuit";
import { newCircuit, peek, record, releaseProbe } from "../health/circuit";
import type { ReplicaMetrics } from "../picking/vllm-metrics";
import { readsRequests, runPolicy } from "../picking/policies";
import type { PrefixIndexReader } from "../picking/prefix/prefix-index";
import type { RandomSource } from "../../lib/random";
import type { Objective } from "../picking/scoring/slo";
import { sloRank } from "../picking/scoring/slo";
import type { PickerState, RequestFeatures } from "../picking/scoring/types";
import type { OutcomeReport, PoolSpec } from "./wire";

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
  /** The request's view, for policies that read requests; absent, they see an empty request and no metrics. */
  scoring?: ScoringView;
}

/** The request and the replicas as a request-reading policy sees them, from the isolate's view. */
export interface ScoringView {
  request: RequestFeatures;
  index: PrefixIndexReader;
  metrics: (replica: string) => ReplicaMetrics | null;
  state: PickerState;
  /** The pool's TTFT predictor for this request (null while it learns). */
  predictTtftMs?: (replica: string) => number | null;
  /** This isolate's requests in flight on a replica whose prompts open as this one's does. */
  prefixLoad?: (replica: string) => number;
  /** The request's objectives (`X-SLO-TTFT-Ms`, `X-SLO-TPOT-Ms`), each with its predictor; empty without any. */
  slo?: readonly Objective[];
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
  /** Every routable replica is at max_ongoing_requests: the order ignores the cap. */
  capped?: boolean;
  /** A request-reading policy's state for the next pick (round robin's cursor). */
  state?: PickerState;
  /** With objectives: the replicas predicted to meet them all (null: none could be judged). */
  sloMeets?: ReadonlySet<string> | null;
  /** Why `order` is empty, when it is: the reply names the real cause (an objective never empties it: it only reorders). */
  empty?: EmptyCause;
  /** With every circuit open: when the first may take a probe (epoch ms), the client's Retry-After. */
  reopensAt?: number;
}

/** `drained`: no replica has weight > 0; `circuits_open`: every circuit refuses; `unpicked`: the policy kept none; `unknown_replica`: a forced replica is not in the spec. */
export type EmptyCause = "drained" | "circuits_open" | "unpicked" | "unknown_replica";

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
    // An operator's pin skips circuits and shedding, never the replica's hard cap.
    if (!known) return { order: [], probe: false, pinnedAllowed: null, failedOpen: false, empty: "unknown_replica" };
    const capped = spec.maxOngoing > 0 && input.load(input.forced) >= spec.maxOngoing;
    return { order: [input.forced], probe: false, pinnedAllowed: null, failedOpen: false, capped };
  }

  const eligible = spec.replicas.filter((r) => r.weight > 0);
  const admitted = eligible.filter((r) => peek(circuitOf(r.id), now, spec.circuit) !== "no");
  // max_ongoing_requests: a replica at its cap is not offered while another is not.
  const underCap = spec.maxOngoing > 0 ? admitted.filter((r) => input.load(r.id) < spec.maxOngoing) : admitted;
  const capped = underCap.length === 0 && admitted.length > 0;
  const policy = orderBy(input);
  const picked = policy(capped ? admitted : underCap);
  const slo = input.scoring?.slo;
  const ranked = slo && slo.length > 0 ? sloRank(picked.order, slo) : null;
  let ordered = ranked ? ranked.order : picked.order;

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
    const all = policy(eligible);
    return { order: all.order, probe: false, pinnedAllowed, failedOpen: true, state: all.state };
  }
  const choice: Choice = { order, probe, pinnedAllowed, failedOpen: false, capped, state: picked.state };
  if (ranked) choice.sloMeets = ranked.meets;
  if (order.length === 0) choice.empty = eligible.length === 0 ? "drained" : admitted.length === 0 ? "circuits_open" : "unpicked";
  if (choice.empty === "circuits_open") {
    const reopens = eligible.map((r) => circuitOf(r.id).reopenAt).filter((at): at is number => at !== null);
    if (reopens.length > 0) choice.reopensAt = Math.min(...reopens);
  }
  return choice;
}

type Replica = PoolSpec["replicas"][number];

/**
 * The pool's policy over a set of replicas. A policy that reads requests sees the request's
 * view and carries its picker state on; the others see weights and leases, and keep no state.
 */
function orderBy(input: ChooseInput): (replicas: readonly Replica[]) => { order: string[]; state?: PickerState } {
  const { spec, random } = input;
  const view = input.scoring ?? NO_SCORING_VIEW;
  const keepsState = readsRequests(spec.policy);
  return (replicas) => {
    const candidates = replicas.map((r) => ({ id: r.id, weight: r.weight, inflight: input.load(r.id), labels: r.labels, metrics: view.metrics(r.id) }));
    const result = runPolicy(spec.policy, { candidates, request: view.request, index: view.index, now: input.now, settings: spec.scoring, state: view.state, random, predictTtftMs: view.predictTtftMs, prefixLoad: view.prefixLoad });
    return keepsState ? { order: result.order, state: result.state } : { order: result.order };
  };
}

const NO_SCORING_VIEW: ScoringView = {
  request: { hashes: [], adapter: null, locality: {} },
  index: { match: () => new Map(), blocksOf: () => 0 },
  metrics: () => null,
  state: { roundRobinCursor: 0 },
};

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
