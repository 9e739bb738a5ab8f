import { describe, expect, it } from "vitest";
import type { CircuitState } from "../../src/core/health/circuit";
import { DEFAULT_CIRCUIT_POLICY, newCircuit } from "../../src/core/health/circuit";
import { applyOutcomes, choose } from "../../src/core/pool/choose";
import type { PoolSpec } from "../../src/core/pool/wire";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { scripted } from "../support/scripted-random";

const NOW = 1_000_000;
const spec = (over: Partial<PoolSpec> = {}): PoolSpec => ({
  pool: "p",
  version: "v1",
  policy: "least_loaded",
  failOpen: false,
  circuit: { ...DEFAULT_CIRCUIT_POLICY, cooldown_ms: 1000 },
  healthCheckS: 0,
  healthPath: "/health",
  metrics: { scrapeMs: 0, path: "/metrics", timeoutMs: 1000, staleMs: 5000, failureThreshold: 3 },
  scoring: DEFAULT_SETTINGS,
  indexCapacityBlocks: 1024,
  locality: [],
  maxOngoing: 0,
  queue: { maxWaiting: 0, ttlMs: 2000 },
  replicas: [
    { id: "a", url: "http://a", weight: 1, labels: {} },
    { id: "b", url: "http://b", weight: 1, labels: {} },
    { id: "c", url: "http://c", weight: 1, labels: {} },
  ],
  ...over,
});
const open = (reopenAt: number): CircuitState => ({ ...newCircuit(), phase: "open", openedAt: NOW - 1, reopenAt });
const loads: Record<string, number> = { a: 3, b: 1, c: 2 };
const base = { circuits: new Map<string, CircuitState>(), load: (id: string) => loads[id] ?? 0, pinned: null, forced: null, random: scripted([]), now: NOW };

describe("choose", () => {
  it("orders by the pool's policy (least_loaded here: b, c, a)", () => {
    expect(choose({ ...base, spec: spec() }).order).toEqual(["b", "c", "a"]);
  });

  it("puts a live pin first and reports it allowed", () => {
    const out = choose({ ...base, spec: spec(), pinned: "a" });
    expect(out.order).toEqual(["a", "b", "c"]);
    expect(out.pinnedAllowed).toBe(true);
  });

  it("reports a pin on an open circuit as not allowed and leaves it out", () => {
    const out = choose({ ...base, spec: spec(), circuits: new Map([["a", open(NOW + 500)]]), pinned: "a" });
    expect(out.order).toEqual(["b", "c"]);
    expect(out.pinnedAllowed).toBe(false);
  });

  it("offers a replica past its cooldown only as the first choice, flagged as needing a probe admission", () => {
    const circuits = new Map([["b", open(NOW - 1)]]);
    const first = choose({ ...base, spec: spec(), circuits });
    expect(first.order).toEqual(["b", "c", "a"]);
    expect(first.probe).toBe(true);
    // Not first (a pin elsewhere goes first): b is no fallback either, so one request never spends two probes.
    const pinned = choose({ ...base, spec: spec(), circuits, pinned: "a" });
    expect(pinned.order).toEqual(["a", "c"]);
    expect(pinned.probe).toBe(false);
    // With its probe slot taken (half-open, 1 of 1 in flight), b is neither first nor a fallback.
    const taken = new Map([["b", { ...open(NOW - 1), phase: "half_open" as const, probesInFlight: 1 }]]);
    const second = choose({ ...base, spec: spec(), circuits: taken });
    expect(second.order).toEqual(["c", "a"]);
    expect(second.probe).toBe(false);
  });

  it("never offers a half-open replica with a free probe slot as a fallback, wherever the policy or a pin puts it", () => {
    const halfOpen = (probesInFlight: number): CircuitState => ({ ...open(NOW - 1), phase: "half_open", probesInFlight });
    // least_loaded orders b(1), c(2), a(3): c half-open with its slot free is second, so it is left out.
    const second = choose({ ...base, spec: spec(), circuits: new Map([["c", halfOpen(0)]]) });
    expect(second).toMatchObject({ order: ["b", "a"], probe: false });
    // Last in the order, with 1 of 2 probe slots taken: still a probe, still no fallback.
    const twoSlots = spec({ circuit: { ...DEFAULT_CIRCUIT_POLICY, cooldown_ms: 1000, half_open_probes: 2 } });
    const last = choose({ ...base, spec: twoSlots, circuits: new Map([["a", halfOpen(1)]]) });
    expect(last).toMatchObject({ order: ["b", "c"], probe: false });
    // Two replicas waiting for a probe: only the first in order goes, as the probe; the other is no fallback.
    const both = choose({ ...base, spec: spec(), circuits: new Map([["b", halfOpen(0)], ["c", open(NOW - 1)]]) });
    expect(both).toMatchObject({ order: ["b", "a"], probe: true });
    // A pin on a half-open replica goes first as the probe, with closed fallbacks only.
    const pinned = choose({ ...base, spec: spec(), circuits: new Map([["a", halfOpen(0)], ["c", halfOpen(0)]]), pinned: "a" });
    expect(pinned).toMatchObject({ order: ["a", "b"], probe: true, pinnedAllowed: true });
  });

  it("returns nothing when every circuit is open, or everything when the pool is fail-open", () => {
    const allOpen = new Map(["a", "b", "c"].map((id) => [id, open(NOW + 500)] as const));
    expect(choose({ ...base, spec: spec(), circuits: allOpen }).order).toEqual([]);
    const failOpen = choose({ ...base, spec: spec({ failOpen: true }), circuits: allOpen });
    expect(failOpen).toMatchObject({ order: ["b", "c", "a"], failedOpen: true });
  });

  it("excludes weight 0, except for an admin override which ignores weights and circuits", () => {
    const weights = spec({ replicas: [{ id: "a", url: "http://a", weight: 0, labels: {} }, { id: "b", url: "http://b", weight: 1, labels: {} }] });
    expect(choose({ ...base, spec: weights }).order).toEqual(["b"]);
    expect(choose({ ...base, spec: weights, forced: "a", circuits: new Map([["a", open(NOW + 500)]]) }).order).toEqual(["a"]);
    expect(choose({ ...base, spec: weights, forced: "zz" }).order).toEqual([]);
  });

  it("says why its order is empty: every weight 0, or every circuit open (and only then)", () => {
    const allOpen = new Map(["a", "b", "c"].map((id) => [id, open(NOW + 500)] as const));
    expect(choose({ ...base, spec: spec(), circuits: allOpen })).toMatchObject({ order: [], empty: "circuits_open" });
    const drained = spec({ replicas: [{ id: "a", url: "http://a", weight: 0, labels: {} }] });
    expect(choose({ ...base, spec: drained })).toMatchObject({ order: [], empty: "drained" });
    expect(choose({ ...base, spec: spec() }).empty).toBeUndefined();
  });

  it("never routes on a non-finite prediction: an SLO whose predictor answers NaN or Infinity leaves every replica in the policy's order", () => {
    const scoring = { request: { hashes: [], adapter: null, locality: {} }, index: { match: () => new Map(), blocksOf: () => 0 }, metrics: () => null, state: { roundRobinCursor: 0 } };
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const out = choose({ ...base, spec: spec(), scoring: { ...scoring, slo: [{ objectiveMs: 100, predictMs: () => bad }] } });
      expect(out.order).toEqual(["b", "c", "a"]);
      expect(out.empty).toBeUndefined();
      // One replica's prediction broken: the objective cannot be judged for the pool, so it is left out.
      const one = choose({ ...base, spec: spec(), scoring: { ...scoring, slo: [{ objectiveMs: 100, predictMs: (id) => (id === "c" ? bad : 300) }] } });
      expect(one.order).toEqual(["b", "c", "a"]);
    }
  });
});

describe("applyOutcomes", () => {
  const outcome = (replica: string, verdict: "success" | "failure" | "neutral", probe: string | null = null) => ({ replica, verdict, at: NOW, probe });

  it("records failures and successes in order, ignores neutral ones and replicas no longer configured", () => {
    const s = spec({ circuit: { ...DEFAULT_CIRCUIT_POLICY, consecutive_failures: 1 } });
    const { changed, transitions } = applyOutcomes(
      new Map(),
      [outcome("a", "failure"), outcome("gone", "failure"), outcome("c", "neutral"), outcome("b", "success")],
      s,
      () => false,
    );
    expect(changed.get("a")!.phase).toBe("open");
    expect(changed.has("gone")).toBe(false);
    expect(changed.has("c")).toBe(false);
    expect(transitions.map((t) => t.replica)).toEqual(["a"]);
  });

  it("frees the probe slot of a probe that ended without a verdict", () => {
    const halfOpen: CircuitState = { ...newCircuit(), phase: "half_open", probesInFlight: 1 };
    const { changed } = applyOutcomes(new Map([["a", halfOpen]]), [outcome("a", "neutral", "t1")], spec(), (o) => o.probe === "t1");
    expect(changed.get("a")).toMatchObject({ phase: "half_open", probesInFlight: 0 });
  });

  it("a successful probe closes the circuit; the same outcome without a live probe token decides nothing", () => {
    const halfOpen: CircuitState = { ...newCircuit(), phase: "half_open", probesInFlight: 1, openedAt: NOW - 10, reopenAt: NOW - 1, trips: 1 };
    const live = applyOutcomes(new Map([["a", halfOpen]]), [outcome("a", "success", "t1")], spec(), () => true);
    expect(live.changed.get("a")!.phase).toBe("closed");
    const swept = applyOutcomes(new Map([["a", halfOpen]]), [outcome("a", "success", "t1")], spec(), () => false);
    expect(swept.changed.get("a")!.phase).toBe("half_open");
  });
});
