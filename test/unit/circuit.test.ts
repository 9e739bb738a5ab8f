import { describe, expect, it } from "vitest";
import {
  admit,
  DEFAULT_CIRCUIT_POLICY,
  healthObserved,
  newCircuit,
  peek,
  record,
  releaseProbe,
  WINDOW_BUCKETS,
} from "../../src/core/health/circuit";
import type { CircuitPolicy, CircuitState } from "../../src/core/health/circuit";

const P = DEFAULT_CIRCUIT_POLICY;
// Ratio rule on its own: the consecutive rule set out of reach.
const RATIO_ONLY: CircuitPolicy = { ...P, consecutive_failures: 1_000 };

/** Frozen all the way down: any mutation of an input throws (modules are strict). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Feeds non-probe outcomes in order at one instant; fails the test if any transition happens before the last. */
function outcomes(state: CircuitState, list: ("success" | "failure")[], now: number, policy = P) {
  let step: ReturnType<typeof record> = { state };
  for (const outcome of list) {
    expect(step.transition).toBeUndefined();
    step = record(deepFreeze(step.state), outcome, now, policy, false);
  }
  return step;
}

const fails = (n: number) => Array<"failure">(n).fill("failure");

/** An open circuit, tripped at `at` by consecutive failures. */
function openedAt(at: number, from = newCircuit()): CircuitState {
  const step = outcomes(from, fails(P.consecutive_failures), at);
  expect(step.state.phase).toBe("open");
  return step.state;
}

/** Half-open with one probe out, entered at reopenAt. */
function probing(open: CircuitState, policy = P): CircuitState {
  const step = admit(deepFreeze(open), open.reopenAt!, policy);
  expect(step.admission).toBe("probe");
  return step.state;
}

describe("closed → open", () => {
  it("trips on the fifth consecutive failure", () => {
    const four = outcomes(newCircuit(), fails(4), 1_000);
    expect(four.transition).toBeUndefined();
    expect(four.state.consecutiveFailures).toBe(4);

    const { state, transition } = record(deepFreeze(four.state), "failure", 1_000, P, false);
    expect(transition).toEqual({ from: "closed", to: "open", reason: "5 consecutive failures" });
    expect(state).toMatchObject({ phase: "open", openedAt: 1_000, reopenAt: 31_000, trips: 1, buckets: [], consecutiveFailures: 0 });
  });

  it("a success resets the consecutive count", () => {
    const step = outcomes(newCircuit(), [...fails(4), "success", ...fails(4)], 0);
    expect(step.transition).toBeUndefined();
    expect(step.state).toMatchObject({ phase: "closed", consecutiveFailures: 4 });
  });

  it("trips on the error ratio once the window holds min_requests outcomes", () => {
    const mixed: ("success" | "failure")[] = ["success", "failure", "success", "failure", "success", "failure", "success", "failure", "failure"];
    const nine = outcomes(newCircuit(), mixed, 0, RATIO_ONLY);
    expect(nine.transition).toBeUndefined(); // 5/9 ≥ 0.5, but 9 < min_requests
    const { state, transition } = record(deepFreeze(nine.state), "failure", 0, RATIO_ONLY, false);
    expect(transition).toEqual({ from: "closed", to: "open", reason: "error ratio 0.60 over 10 requests" });
    expect(state.phase).toBe("open");
  });

  // The rule is "reaches": a failure ratio exactly at error_ratio trips, with exactly
  // min_requests outcomes. (A `>` would let 5 of 10 through at 0.5.)
  it("trips at exactly error_ratio with exactly min_requests outcomes", () => {
    const half = [...Array<"success">(5).fill("success"), ...fails(4)];
    const nine = outcomes(newCircuit(), half, 0, RATIO_ONLY);
    expect(nine.transition).toBeUndefined(); // 4/9 < 0.5
    const { state, transition } = record(deepFreeze(nine.state), "failure", 0, RATIO_ONLY, false);
    expect(transition).toEqual({ from: "closed", to: "open", reason: "error ratio 0.50 over 10 requests" });
    expect(state.phase).toBe("open");

    // Another ratio and minimum: 3 failures of exactly 20 at error_ratio 0.15 (3/20 === 0.15 in doubles).
    const policy: CircuitPolicy = { ...RATIO_ONLY, error_ratio: 0.15, min_requests: 20 };
    const before = outcomes(newCircuit(), [...Array<"success">(17).fill("success"), ...fails(2)], 0, policy);
    expect(before.transition).toBeUndefined(); // 2/19
    expect(record(deepFreeze(before.state), "failure", 0, policy, false).transition?.reason).toBe("error ratio 0.15 over 20 requests");
    // One outcome short of min_requests at the same ratio does not trip.
    const short = outcomes(newCircuit(), [...Array<"success">(16).fill("success"), ...fails(2)], 0, policy);
    expect(record(deepFreeze(short.state), "failure", 0, { ...policy, error_ratio: 3 / 19 }, false).transition).toBeUndefined();
  });

  it("does not trip below the ratio, nor on a success", () => {
    const below = outcomes(newCircuit(), ["success", "success", "failure", "success", "failure", "success", "success", "failure", "success", "failure", "success"], 0, RATIO_ONLY);
    expect(below.transition).toBeUndefined(); // 4/11
    // 5 failures of 9, then a success: 5/10 meets the ratio, but a success never trips.
    const onSuccess = outcomes(newCircuit(), [...fails(5), "success", "success", "success", "success", "success"], 0, RATIO_ONLY);
    expect(onSuccess.transition).toBeUndefined();
  });

  it("forgets outcomes that have left the sliding window", () => {
    const nine = outcomes(newCircuit(), fails(9), 0, RATIO_ONLY).state;
    // At 59,999 ms the bucket that started at 0 is still inside the 60 s window...
    expect(record(nine, "failure", 59_999, RATIO_ONLY, false).transition?.reason).toBe("error ratio 1.00 over 10 requests");
    // ...at 60,000 ms it is not, so the tenth failure stands alone.
    const later = record(nine, "failure", 60_000, RATIO_ONLY, false);
    expect(later.transition).toBeUndefined();
    expect(later.state.buckets).toEqual([{ start: 60_000, ok: 0, fail: 1 }]);
  });

  it("keeps at most WINDOW_BUCKETS buckets", () => {
    let state = newCircuit();
    for (let t = 0; t < 5 * P.window_ms; t += 1_000) state = record(state, "success", t, P, false).state;
    expect(state.buckets).toHaveLength(WINDOW_BUCKETS);
    expect(state.buckets.reduce((n, b) => n + b.ok, 0)).toBe(60); // one per second over the last minute
  });
});

describe("open", () => {
  const open = deepFreeze(openedAt(0));

  it("refuses everything before reopenAt and ignores late outcomes", () => {
    expect(peek(open, 29_999, P)).toBe("no");
    const step = admit(open, 29_999, P);
    expect(step).toEqual({ admission: "no", state: open });
    expect(step.state).toBe(open); // unchanged: nothing to persist
    expect(record(open, "success", 10, P, false)).toEqual({ state: open });
    expect(record(open, "failure", 10, P, false)).toEqual({ state: open });
  });

  it("becomes half-open at reopenAt through admit and admits that request as a probe", () => {
    expect(peek(open, 30_000, P)).toBe("probe");
    const { admission, state, transition } = admit(open, 30_000, P);
    expect(admission).toBe("probe");
    expect(transition).toEqual({ from: "open", to: "half_open", reason: "cooldown elapsed" });
    expect(state).toMatchObject({ phase: "half_open", probesInFlight: 1 });
  });
});

describe("half-open", () => {
  const open = deepFreeze(openedAt(0));

  it("admits exactly half_open_probes probes at once", () => {
    const policy = { ...P, half_open_probes: 3 };
    let state: CircuitState = open;
    const admissions = [];
    for (let i = 0; i < 4; i++) {
      const step = admit(deepFreeze(state), 30_000 + i, policy);
      admissions.push(step.admission);
      state = step.state;
    }
    expect(admissions).toEqual(["probe", "probe", "probe", "no"]);
    expect(state.probesInFlight).toBe(3);
    expect(peek(state, 30_010, policy)).toBe("no");
  });

  it("closes when a probe succeeds", () => {
    const { state, transition } = record(deepFreeze(probing(open)), "success", 31_000, P, true);
    expect(transition).toEqual({ from: "half_open", to: "closed", reason: "probe succeeded" });
    expect(state).toEqual({ phase: "closed", consecutiveFailures: 0, buckets: [], openedAt: null, reopenAt: null, trips: 1, closedAt: 31_000, probesInFlight: 0 });
    expect(admit(state, 31_001, P).admission).toBe("yes");
  });

  it("reopens with a doubled cooldown when a probe fails", () => {
    const { state, transition } = record(deepFreeze(probing(open)), "failure", 31_000, P, true);
    expect(transition).toEqual({ from: "half_open", to: "open", reason: "probe failed" });
    expect(state).toMatchObject({ phase: "open", openedAt: 31_000, reopenAt: 91_000, trips: 2, probesInFlight: 0 });
  });

  it("caps the doubling at max_cooldown_ms", () => {
    let state: CircuitState = open;
    const cooldowns = [state.reopenAt! - state.openedAt!];
    for (let i = 0; i < 6; i++) {
      state = record(deepFreeze(probing(state)), "failure", state.reopenAt!, P, true).state;
      cooldowns.push(state.reopenAt! - state.openedAt!);
    }
    expect(cooldowns).toEqual([30_000, 60_000, 120_000, 240_000, 300_000, 300_000, 300_000]);
  });

  it("ignores outcomes of requests that were not probes", () => {
    const half = deepFreeze(probing(open));
    expect(record(half, "success", 30_001, P, false)).toEqual({ state: half });
    expect(record(half, "failure", 30_001, P, false)).toEqual({ state: half });
  });

  it("frees a slot on releaseProbe, never going below zero", () => {
    const half = deepFreeze(probing(open));
    expect(admit(half, 30_001, P).admission).toBe("no");
    const released = releaseProbe(half);
    expect(released).toMatchObject({ phase: "half_open", probesInFlight: 0 });
    expect(admit(deepFreeze(released), 30_002, P).admission).toBe("probe");
    expect(releaseProbe(deepFreeze(released))).toBe(released);
  });
});

describe("backoff memory", () => {
  // Closed again at 31,000 after one trip; its next trip doubles unless it stays closed 300 s.
  const closed = deepFreeze(record(probing(openedAt(0)), "success", 31_000, P, true).state);

  it("doubles on a relapse soon after closing", () => {
    const relapse = openedAt(31_000 + 299_999, closed);
    expect(relapse.reopenAt! - relapse.openedAt!).toBe(60_000);
    expect(relapse.trips).toBe(2);
  });

  it("starts over after the circuit stayed closed for max_cooldown_ms", () => {
    const later = openedAt(31_000 + 300_000, closed);
    expect(later.reopenAt! - later.openedAt!).toBe(30_000);
    expect(later.trips).toBe(1);
  });

  it("does not count time spent open or half-open as stable", () => {
    // Half-open long after the last close: a failed probe still backs off further.
    const stale = deepFreeze(openedAt(31_000 + 1_000, closed)); // trips 2, reopenAt +60 s
    const half = admit(stale, 10_000_000, P).state;
    const failed = record(deepFreeze(half), "failure", 10_000_000, P, true).state;
    expect(failed.reopenAt! - failed.openedAt!).toBe(120_000);
  });
});

describe("health checks", () => {
  const open = deepFreeze(openedAt(0));

  it("a passing check closes an open circuit only after its cooldown", () => {
    expect(healthObserved(open, true, 29_999, P)).toEqual({ state: open });
    const { state, transition } = healthObserved(open, true, 30_000, P);
    expect(transition).toEqual({ from: "open", to: "closed", reason: "health check passed" });
    expect(state).toMatchObject({ phase: "closed", closedAt: 30_000, probesInFlight: 0 });
  });

  it("a failing check leaves an open circuit as it is", () => {
    expect(healthObserved(open, false, 30_000, P)).toEqual({ state: open });
  });

  it("a passing check closes a half-open circuit; a late probe then counts as a plain outcome", () => {
    const { state, transition } = healthObserved(deepFreeze(probing(open)), true, 30_500, P);
    expect(transition).toEqual({ from: "half_open", to: "closed", reason: "health check passed" });
    const late = record(deepFreeze(state), "failure", 30_600, P, true);
    expect(late.transition).toBeUndefined();
    expect(late.state).toMatchObject({ phase: "closed", probesInFlight: 0, consecutiveFailures: 1 });
  });

  it("a failing check reopens a half-open circuit with backoff", () => {
    const { state, transition } = healthObserved(deepFreeze(probing(open)), false, 30_500, P);
    expect(transition).toEqual({ from: "half_open", to: "open", reason: "health check failed" });
    expect(state).toMatchObject({ phase: "open", reopenAt: 30_500 + 60_000, trips: 2, probesInFlight: 0 });
  });

  it("while closed, a pass resets the failure streak and a failure counts toward a trip", () => {
    const four = deepFreeze(outcomes(newCircuit(), fails(4), 0).state);
    expect(healthObserved(four, true, 1, P).state).toMatchObject({ phase: "closed", consecutiveFailures: 0 });
    const step = healthObserved(four, false, 1, P);
    expect(step.transition).toEqual({ from: "closed", to: "open", reason: "5 consecutive failures" });
    const fresh = deepFreeze(newCircuit());
    expect(healthObserved(fresh, true, 1, P).state).toBe(fresh);
  });
});

describe("plain data", () => {
  /** Every state of a full life cycle: closed, open, half-open, closed again, reopened. */
  function lifeCycle(): CircuitState[] {
    const states: CircuitState[] = [newCircuit()];
    const push = (s: CircuitState) => (states.push(s), s);
    let s = push(outcomes(newCircuit(), ["success", ...fails(3)], 0).state);
    s = push(outcomes(s, fails(2), 1_000).state); // fourth and fifth in a row: open
    s = push(admit(s, s.reopenAt!, P).state);
    s = push(record(s, "success", 32_000, P, true).state);
    s = push(openedAt(40_000, s));
    push(healthObserved(admit(s, s.reopenAt!, P).state, false, 110_000, P).state);
    return states;
  }

  it("never mutates its input (every input deep-frozen)", () => {
    for (const state of lifeCycle()) {
      const frozen = deepFreeze(structuredClone(state));
      const before = structuredClone(frozen);
      for (const now of [0, 31_000, 1_000_000]) {
        peek(frozen, now, P);
        admit(frozen, now, P);
        record(frozen, "success", now, P, true);
        record(frozen, "failure", now, P, false);
        releaseProbe(frozen);
        healthObserved(frozen, true, now, P);
        healthObserved(frozen, false, now, P);
      }
      expect(frozen).toEqual(before);
    }
  });

  it("survives a JSON round trip and structuredClone, and behaves the same after", () => {
    for (const state of lifeCycle()) {
      const json = JSON.parse(JSON.stringify(state)) as CircuitState;
      expect(json).toEqual(state);
      expect(structuredClone(state)).toEqual(state);
      for (const now of [0, 31_000, 1_000_000]) {
        expect(admit(json, now, P)).toEqual(admit(state, now, P));
        expect(record(json, "failure", now, P, true)).toEqual(record(state, "failure", now, P, true));
      }
    }
  });
});
