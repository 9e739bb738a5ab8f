import { describe, expect, it } from "vitest";
import { loraFilter } from "../../src/core/picking/filters/lora";
import { saturationFilter } from "../../src/core/picking/filters/saturation";
import { isFresh } from "../../src/core/picking/scoring/freshness";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import type { Candidate } from "../../src/core/picking/scoring/types";
import { NOW, replica } from "../support/candidates";

const fresh = (c: Candidate) => isFresh(c.metrics, NOW, DEFAULT_SETTINGS.stalenessMs);
const STALE = NOW - DEFAULT_SETTINGS.stalenessMs - 1;
const ids = (cs: readonly Candidate[]) => cs.map((c) => c.id);

describe("saturation filter", () => {
  const thresholds = DEFAULT_SETTINGS.saturation;

  it("uses GAIE's utilization-detector thresholds: queue 5, kv-cache 0.8", () => {
    expect(thresholds).toEqual({ queueDepth: 5, kvUsage: 0.8 });
  });

  it("drops a fresh replica at queue ≥ 5 or kv ≥ 0.8 and keeps one just below either", () => {
    const fleet = [
      replica("q4", { metrics: { waiting: 4, kvUsage: 0.79 } }),
      replica("q5", { metrics: { waiting: 5 } }),
      replica("kv80", { metrics: { kvUsage: 0.8 } }),
      replica("idle"),
    ];
    expect(ids(saturationFilter(fleet, fresh, thresholds))).toEqual(["q4", "idle"]);
  });

  it("never drops a replica for stale or missing metrics, however saturated they once looked", () => {
    const fleet = [replica("old-full", { metrics: { waiting: 50, kvUsage: 1, sampledAt: STALE } }), replica("none", { metrics: null }), replica("full", { metrics: { waiting: 9 } })];
    expect(ids(saturationFilter(fleet, fresh, thresholds))).toEqual(["old-full", "none"]);
  });

  it("never drops a replica for an unknown or unusable queue or usage (NaN, ±Infinity)", () => {
    const fleet = [
      replica("inf", { metrics: { waiting: Number.POSITIVE_INFINITY } }),
      replica("nan", { metrics: { kvUsage: Number.NaN } }),
      replica("none", { metrics: { waiting: null, kvUsage: null } }),
      replica("full", { metrics: { waiting: 9 } }),
    ];
    expect(ids(saturationFilter(fleet, fresh, thresholds))).toEqual(["inf", "nan", "none"]);
  });

  it("fails open: when every replica is saturated it keeps them all", () => {
    const fleet = [replica("a", { metrics: { waiting: 7 } }), replica("b", { metrics: { kvUsage: 0.95 } })];
    expect(ids(saturationFilter(fleet, fresh, thresholds))).toEqual(["a", "b"]);
    expect(saturationFilter([], fresh, thresholds)).toEqual([]);
  });

  it("does not change its input", () => {
    const fleet = Object.freeze([replica("a", { metrics: { waiting: 7 } }), replica("b")]);
    expect(ids(saturationFilter(fleet, fresh, thresholds))).toEqual(["b"]);
    expect(ids(fleet)).toEqual(["a", "b"]);
  });
});

describe("LoRA filter", () => {
  const lora = (running: string[], waiting: string[], maxLora: number, sampledAt = NOW) => ({ metrics: { loraRunning: running, loraWaiting: waiting, maxLora, sampledAt } });

  it("keeps replicas running the adapter, loading it, or with a free slot; drops full ones without it", () => {
    const fleet = [
      replica("running", lora(["sql", "x"], [], 2)),
      replica("loading", lora(["x"], ["sql"], 2)),
      replica("free-slot", lora(["x"], [], 2)),
      replica("full", lora(["x", "y"], [], 2)),
      replica("no-lora", lora([], [], 0)),
    ];
    expect(ids(loraFilter(fleet, fresh, "sql"))).toEqual(["running", "loading", "free-slot"]);
  });

  it("keeps replicas with stale or missing metrics: not known to lack the adapter", () => {
    const fleet = [replica("old-full", lora(["x", "y"], [], 2, STALE)), replica("none", { metrics: null }), replica("full", lora(["x"], [], 1)), replica("has-it", lora(["sql"], [], 1))];
    expect(ids(loraFilter(fleet, fresh, "sql"))).toEqual(["old-full", "none", "has-it"]);
  });

  it("fails open: when no replica can take the adapter it keeps them all", () => {
    const fleet = [replica("a", lora(["x"], [], 1)), replica("b", lora([], [], 0))];
    expect(ids(loraFilter(fleet, fresh, "sql"))).toEqual(["a", "b"]);
    expect(loraFilter([], fresh, "sql")).toEqual([]);
  });

  it("keeps every replica for a base-model request", () => {
    const fleet = [replica("a", lora(["x"], [], 1)), replica("b", lora([], [], 0))];
    expect(ids(loraFilter(fleet, fresh, null))).toEqual(["a", "b"]);
  });
});
