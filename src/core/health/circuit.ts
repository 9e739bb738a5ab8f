/**
 * Per-replica circuit breaker as a pure state machine. The pool machine
 * (src/core/pool/machine.ts) holds one CircuitState per replica, and its object stores
 * it when its phase or timers change (`durablyDifferent`); time is always a
 * parameter. Every function returns a new state (or the input itself when nothing
 * changed, so `next !== prev` means "the state moved"; window counts move on every
 * outcome but are not worth a write); inputs are never mutated.
 *
 *   closed ──trip──▶ open ──now ≥ reopenAt, admit──▶ half_open ──probe ok──▶ closed
 *                     ▲                                  │
 *                     └──────── probe failed (backoff) ──┘
 */

export interface CircuitPolicy {
  consecutive_failures: number; // trip after this many failures in a row
  error_ratio: number; // or when failures/total in the sliding window reach this (0..1]
  window_ms: number; // sliding window length
  min_requests: number; // the ratio rule needs at least this many outcomes in the window
  cooldown_ms: number; // first open period
  max_cooldown_ms: number; // cap of the doubling backoff
  half_open_probes: number; // requests admitted at once while half-open
}

export const DEFAULT_CIRCUIT_POLICY: CircuitPolicy = {
  consecutive_failures: 5, // Envoy outlier detection's consecutive_5xx default
  error_ratio: 0.5, // with window_ms: LiteLLM cools a deployment down above 50% failures in a minute
  window_ms: 60_000, // one minute, as LiteLLM's failure-rate rule
  min_requests: 10, // a ratio over fewer outcomes is noise
  cooldown_ms: 30_000, // Envoy's base_ejection_time
  max_cooldown_ms: 300_000, // Envoy's max_ejection_time
  half_open_probes: 1, // one request risks one failure
};

/** The window is this many buckets of window_ms / WINDOW_BUCKETS: bounded state, and its far edge moves in 10% steps. */
export const WINDOW_BUCKETS = 10;

export type CircuitPhase = "closed" | "open" | "half_open";

export interface WindowBucket {
  start: number; // ms, aligned to a multiple of window_ms / WINDOW_BUCKETS
  ok: number;
  fail: number;
}

export interface CircuitState {
  phase: CircuitPhase;
  consecutiveFailures: number; // 0 outside closed: the count that tripped it is in the transition reason
  buckets: WindowBucket[]; // sliding window, oldest first; empty outside closed
  openedAt: number | null; // start of the current open/half_open episode; null while closed
  reopenAt: number | null; // open → half_open allowed from this time; null while closed
  trips: number; // trips since the circuit last stayed closed for max_cooldown_ms; drives backoff
  closedAt: number | null; // when it last closed; null if never opened
  probesInFlight: number; // 0 outside half_open
}

export interface Transition {
  from: CircuitPhase;
  to: CircuitPhase;
  reason: string;
}

export type Admission = "yes" | "probe" | "no";

export interface Step {
  state: CircuitState;
  transition?: Transition;
}

export function newCircuit(): CircuitState {
  return {
    phase: "closed",
    consecutiveFailures: 0,
    buckets: [],
    openedAt: null,
    reopenAt: null,
    trips: 0,
    closedAt: null,
    probesInFlight: 0,
  };
}

/**
 * Whether `b` differs from `a` in what storage must keep across a restart: the phase and
 * its timers. Window counts change on every outcome; storing them would cost a write per
 * report, and losing them only restarts the window.
 */
export function durablyDifferent(a: CircuitState, b: CircuitState): boolean {
  return a.phase !== b.phase || a.consecutiveFailures !== b.consecutiveFailures || a.trips !== b.trips || a.reopenAt !== b.reopenAt;
}

/** Read-only: would a request be admitted now? (open past reopenAt reads as "probe" if a slot is free.) */
export function peek(state: CircuitState, now: number, policy: CircuitPolicy): Admission {
  switch (state.phase) {
    case "closed":
      return "yes";
    case "open":
      return cooledDown(state, now) && policy.half_open_probes > 0 ? "probe" : "no";
    case "half_open":
      return state.probesInFlight < policy.half_open_probes ? "probe" : "no";
  }
}

/**
 * Admit one request: closed → "yes"; open before reopenAt → "no"; open at/after reopenAt
 * → half_open ("cooldown elapsed") and admitted as half_open; half_open with a free probe
 * slot → "probe"; else "no".
 */
export function admit(
  state: CircuitState,
  now: number,
  policy: CircuitPolicy,
): { admission: Admission; state: CircuitState; transition?: Transition } {
  if (state.phase === "closed") return { admission: "yes", state };
  if (state.phase === "half_open") return admitProbe(state, policy);
  if (!cooledDown(state, now)) return { admission: "no", state };
  return {
    ...admitProbe({ ...state, phase: "half_open", probesInFlight: 0 }, policy),
    transition: { from: "open", to: "half_open", reason: "cooldown elapsed" },
  };
}

function admitProbe(state: CircuitState, policy: CircuitPolicy): { admission: Admission; state: CircuitState } {
  if (state.probesInFlight >= policy.half_open_probes) return { admission: "no", state };
  return { admission: "probe", state: { ...state, probesInFlight: state.probesInFlight + 1 } };
}

/** Outcome of an admitted request. wasProbe = it was admitted as "probe". */
export function record(
  state: CircuitState,
  outcome: "success" | "failure",
  now: number,
  policy: CircuitPolicy,
  wasProbe: boolean,
): Step {
  if (wasProbe) state = releaseProbe(state);
  switch (state.phase) {
    case "closed":
      // A probe that finishes after a health check closed the circuit still counts here:
      // it is a real outcome of this replica.
      return closedOutcome(state, outcome === "failure", now, policy);
    case "open":
      return { state }; // admitted before the trip; says nothing about the replica now
    case "half_open":
      // Non-probe outcomes were admitted before the trip and never decide the verdict.
      if (!wasProbe) return { state };
      return outcome === "success"
        ? close(state, now, "probe succeeded")
        : trip(state, now, policy, "probe failed");
  }
}

/** A probe that ended without a verdict (client went away, lease expired) frees its slot. */
export function releaseProbe(state: CircuitState): CircuitState {
  return state.probesInFlight > 0 ? { ...state, probesInFlight: state.probesInFlight - 1 } : state;
}

/**
 * An active health check result. Healthy: open at/after reopenAt or half_open → closed
 * ("health check passed"); closed → consecutiveFailures reset. Unhealthy: counts as a
 * non-probe failure while closed; half_open → open again with backoff ("health check failed").
 */
export function healthObserved(state: CircuitState, healthy: boolean, now: number, policy: CircuitPolicy): Step {
  switch (state.phase) {
    case "closed":
      if (!healthy) return closedOutcome(state, true, now, policy);
      return state.consecutiveFailures === 0 ? { state } : { state: { ...state, consecutiveFailures: 0 } };
    case "open":
      // The cooldown is a minimum ejection time even for a passing check; a failing one
      // adds nothing, as the next probe will decide.
      return healthy && cooledDown(state, now) ? close(state, now, "health check passed") : { state };
    case "half_open":
      return healthy ? close(state, now, "health check passed") : trip(state, now, policy, "health check failed");
  }
}

function cooledDown(state: CircuitState, now: number): boolean {
  return state.reopenAt === null || now >= state.reopenAt;
}

function closedOutcome(state: CircuitState, failed: boolean, now: number, policy: CircuitPolicy): Step {
  const buckets = addToWindow(state.buckets, failed, now, policy.window_ms);
  const consecutiveFailures = failed ? state.consecutiveFailures + 1 : 0;
  const next: CircuitState = { ...state, buckets, consecutiveFailures };
  // Only a failure can trip: a success never raises the ratio, and tripping on a success
  // that merely brought the total up to min_requests would read wrong in the log.
  if (!failed) return { state: next };
  if (consecutiveFailures >= policy.consecutive_failures) {
    return trip(next, now, policy, `${consecutiveFailures} consecutive failures`);
  }
  let ok = 0;
  let fail = 0;
  for (const b of buckets) {
    ok += b.ok;
    fail += b.fail;
  }
  const total = ok + fail;
  if (total >= policy.min_requests && fail / total >= policy.error_ratio) {
    return trip(next, now, policy, `error ratio ${(fail / total).toFixed(2)} over ${total} requests`);
  }
  return { state: next };
}

/** Drops buckets that started window_ms or more before now, then counts the outcome. */
function addToWindow(buckets: readonly WindowBucket[], failed: boolean, now: number, windowMs: number): WindowBucket[] {
  const width = windowMs / WINDOW_BUCKETS;
  const start = Math.floor(now / width) * width;
  const kept = buckets.filter((b) => b.start > now - windowMs);
  const index = kept.findIndex((b) => b.start === start);
  const old = index >= 0 ? kept[index]! : { start, ok: 0, fail: 0 };
  const bucket = { start, ok: old.ok + (failed ? 0 : 1), fail: old.fail + (failed ? 1 : 0) };
  if (index >= 0) kept[index] = bucket;
  else {
    kept.push(bucket);
    kept.sort((a, b) => a.start - b.start); // an outcome stamped slightly in the past lands in order
  }
  return kept;
}

function trip(state: CircuitState, now: number, policy: CircuitPolicy, reason: string): Step {
  // Backoff memory fades only after the circuit has *stayed closed* that long; time spent
  // open or half-open does not count, so a replica that keeps failing probes keeps doubling.
  const stable = state.phase === "closed" && (state.closedAt === null || now - state.closedAt >= policy.max_cooldown_ms);
  const trips = stable ? 0 : state.trips;
  const cooldown = Math.min(policy.cooldown_ms * 2 ** trips, policy.max_cooldown_ms);
  return {
    state: {
      phase: "open",
      consecutiveFailures: 0,
      buckets: [],
      openedAt: now,
      reopenAt: now + cooldown,
      trips: trips + 1,
      closedAt: state.closedAt,
      // Probes still out will report into a later phase; record() clamps at 0.
      probesInFlight: 0,
    },
    transition: { from: state.phase, to: "open", reason },
  };
}

function close(state: CircuitState, now: number, reason: string): Step {
  return {
    state: {
      phase: "closed",
      consecutiveFailures: 0,
      buckets: [],
      openedAt: null,
      reopenAt: null,
      trips: state.trips, // kept: a relapse soon after closing backs off further
      closedAt: now,
      probesInFlight: 0,
    },
    transition: { from: state.phase, to: "closed", reason },
  };
}
