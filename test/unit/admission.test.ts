import { describe, expect, it } from "vitest";
import type { ReplicaMetrics } from "../../src/core/picking/vllm-metrics";
import { admission, criticalLimit, isSaturated, requestPriority } from "../../src/core/pool/admission";

const NOW = 1_000_000;
const BOUNDS = { queueDepth: 5, kvUsage: 0.8, staleMs: 5_000, maxOngoing: 0 };
const sample = (waiting: number, kvUsage: number, age = 0): ReplicaMetrics => ({
  waiting, running: 1, kvUsage, loraRunning: [], loraWaiting: [], maxLora: null, blockSize: 16, numGpuBlocks: 100, prefixHits: 0, prefixQueries: 0, itlSumS: null, itlCount: null, tpotMs: null, sampledAt: NOW - age,
});

describe("isSaturated", () => {
  it("is true from fresh metrics at either bound, inclusive", () => {
    expect(isSaturated(sample(5, 0.1), 0, NOW, BOUNDS)).toBe(true);
    expect(isSaturated(sample(4, 0.1), 0, NOW, BOUNDS)).toBe(false);
    expect(isSaturated(sample(0, 0.8), 0, NOW, BOUNDS)).toBe(true);
    expect(isSaturated(sample(0, 0.79), 0, NOW, BOUNDS)).toBe(false);
  });

  it("never from stale or missing metrics: an old full queue says nothing now", () => {
    expect(isSaturated(sample(50, 1, 5_000), 0, NOW, BOUNDS)).toBe(true); // at the bound: still fresh
    expect(isSaturated(sample(50, 1, 5_001), 0, NOW, BOUNDS)).toBe(false);
    expect(isSaturated(null, 0, NOW, BOUNDS)).toBe(false);
  });

  it("never from an unknown or unusable queue or usage", () => {
    expect(isSaturated(sample(Number.POSITIVE_INFINITY, 0.1), 0, NOW, BOUNDS)).toBe(false);
    expect(isSaturated(sample(0, Number.POSITIVE_INFINITY), 0, NOW, BOUNDS)).toBe(false);
    expect(isSaturated({ ...sample(0, 0), waiting: null, kvUsage: null }, 0, NOW, BOUNDS)).toBe(false);
  });

  it("is true at max_ongoing_requests whatever the metrics, and the cap 0 means none", () => {
    expect(isSaturated(null, 3, NOW, { ...BOUNDS, maxOngoing: 3 })).toBe(true);
    expect(isSaturated(null, 2, NOW, { ...BOUNDS, maxOngoing: 3 })).toBe(false);
    expect(isSaturated(null, 1_000, NOW, BOUNDS)).toBe(false);
  });
});

describe("admission", () => {
  const full = () => true;
  const room = (id: string) => id === "b";
  it("sheds sheddable requests only when every replica is saturated", () => {
    expect(admission({ priority: "sheddable", replicas: ["a", "b"], capped: false, saturated: full })).toEqual({ admitted: false, reason: "saturated" });
    expect(admission({ priority: "sheddable", replicas: ["a", "b"], capped: false, saturated: room })).toEqual({ admitted: true });
    expect(admission({ priority: "standard", replicas: ["a", "b"], capped: false, saturated: full })).toEqual({ admitted: true });
  });

  it("refuses every class at capacity, critical too (the hard cap); nothing to route is not shedding", () => {
    expect(admission({ priority: "standard", replicas: ["a"], capped: true, saturated: full })).toEqual({ admitted: false, reason: "at_capacity" });
    expect(admission({ priority: "sheddable", replicas: ["a"], capped: true, saturated: full })).toEqual({ admitted: false, reason: "at_capacity" });
    expect(admission({ priority: "critical", replicas: ["a"], capped: true, saturated: full })).toEqual({ admitted: false, reason: "at_capacity" });
    expect(admission({ priority: "sheddable", replicas: [], capped: false, saturated: full })).toEqual({ admitted: true });
  });

  it("never sheds critical below the cap, but holds it to the pool's critical share", () => {
    expect(admission({ priority: "critical", replicas: ["a"], capped: false, saturated: full })).toEqual({ admitted: true });
    expect(admission({ priority: "critical", replicas: ["a"], capped: false, saturated: full, criticalShareFull: true })).toEqual({ admitted: false, reason: "critical_share" });
    expect(admission({ priority: "standard", replicas: ["a"], capped: false, saturated: full, criticalShareFull: true })).toEqual({ admitted: true }); // only critical is counted
  });
});

describe("criticalLimit", () => {
  it("is the share of the pool's slots, rounded down, at least 1; no cap, no bound", () => {
    expect(criticalLimit(2, 1, 0.5)).toBe(1);
    expect(criticalLimit(4, 3, 0.5)).toBe(6);
    expect(criticalLimit(1, 1, 0.1)).toBe(1);
    expect(criticalLimit(2, 2, 1)).toBe(4);
    expect(criticalLimit(0, 3, 0.5)).toBe(Infinity);
  });
});

describe("requestPriority", () => {
  it("lets a client lower its class, never raise it; no header keeps the model's; anything else is null", () => {
    expect(requestPriority("standard", null)).toBe("standard");
    expect(requestPriority("standard", "Sheddable")).toBe("sheddable");
    expect(requestPriority("standard", "critical")).toBe("standard");
    expect(requestPriority("critical", " standard ")).toBe("standard");
    expect(requestPriority("sheddable", "critical")).toBe("sheddable");
    expect(requestPriority("standard", "urgent")).toBeNull();
  });
});
