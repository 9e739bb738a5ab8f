import { describe, expect, it } from "vitest";
import { freshness, isFresh } from "../../src/core/picking/scoring/freshness";
import { SCORERS } from "../../src/core/picking/scorers/index";
import { inflightScores, relativeLoad } from "../../src/core/picking/scorers/inflight";
import { kvCacheScores } from "../../src/core/picking/scorers/kv-cache";
import { localityScores } from "../../src/core/picking/scorers/locality";
import { LORA_ACTIVE, LORA_FREE_SLOT, LORA_NONE, LORA_WAITING, loraScores } from "../../src/core/picking/scorers/lora";
import { prefixScores } from "../../src/core/picking/scorers/prefix";
import { queueScores } from "../../src/core/picking/scorers/queue";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { features, metrics, NOW, replica } from "../support/candidates";

const STALE_MS = DEFAULT_SETTINGS.stalenessMs;
const PURE_RATIO = { matchLengthWeight: 0, matchLengthScaleBlocks: 512 };
const GAIE_INFLIGHT = { idleThreshold: 0, maxBusyScore: 1 };

describe("freshness", () => {
  it("is fresh up to and including the staleness bound, stale 1 ms past it", () => {
    expect(isFresh(metrics({ sampledAt: NOW - STALE_MS }), NOW, STALE_MS)).toBe(true);
    expect(isFresh(metrics({ sampledAt: NOW - STALE_MS - 1 }), NOW, STALE_MS)).toBe(false);
  });

  it("counts missing metrics and unusable timestamps as stale, a future stamp (clock skew) as fresh", () => {
    expect(isFresh(null, NOW, STALE_MS)).toBe(false);
    expect(isFresh(metrics({ sampledAt: Number.NaN }), NOW, STALE_MS)).toBe(false);
    expect(isFresh(metrics({ sampledAt: NOW + 60_000 }), NOW, STALE_MS)).toBe(true);
  });

  it("reads time from its input only: the same sample is fresh or stale by `now`", () => {
    const sample = metrics({ sampledAt: 0 });
    expect(isFresh(sample, STALE_MS, STALE_MS)).toBe(true);
    expect(isFresh(sample, STALE_MS + 1, STALE_MS)).toBe(false);
  });

  it("maps a fleet in order", () => {
    const fleet = [replica("a"), replica("b", { metrics: null }), replica("c", { metrics: { sampledAt: 0 } })];
    expect(freshness(fleet, NOW, STALE_MS)).toEqual([true, false, false]);
    expect(freshness([], NOW, STALE_MS)).toEqual([]);
  });
});

describe("queue scorer", () => {
  it("min-max normalises waiting requests: shortest 1, longest 0", () => {
    const fleet = [replica("a", { metrics: { waiting: 10 } }), replica("b", { metrics: { waiting: 0 } }), replica("c", { metrics: { waiting: 5 } })];
    expect(queueScores(fleet, [true, true, true])).toEqual([0, 1, 0.5]);
  });

  it("scores 1 everywhere when all queues are equal, including a single replica", () => {
    const fleet = [replica("a", { metrics: { waiting: 3 } }), replica("b", { metrics: { waiting: 3 } })];
    expect(queueScores(fleet, [true, true])).toEqual([1, 1]);
    expect(queueScores([replica("a", { metrics: { waiting: 9 } })], [true])).toEqual([1]);
  });

  it("gives a stale replica null and leaves its old reading out of min and max", () => {
    const fleet = [replica("a", { metrics: { waiting: 2 } }), replica("old", { metrics: { waiting: 100 } }), replica("b", { metrics: { waiting: 4 } })];
    expect(queueScores(fleet, [true, false, true])).toEqual([1, null, 0]);
    expect(queueScores(fleet, [false, false, false])).toEqual([null, null, null]);
  });

  it("is empty for an empty fleet", () => {
    expect(queueScores([], [])).toEqual([]);
  });

  it("scores the others as usual when one replica's queue is unknown or not a usable number; that one gets null", () => {
    for (const bad of [null, Number.POSITIVE_INFINITY, Number.NaN, Number.NEGATIVE_INFINITY]) {
      const fleet = [replica("a", { metrics: { waiting: 2 } }), replica("bad", { metrics: { waiting: bad } }), replica("b", { metrics: { waiting: 4 } })];
      expect(queueScores(fleet, [true, true, true]), String(bad)).toEqual([1, null, 0]);
    }
  });
});

describe("kv-cache scorer", () => {
  it("is 1 − usage, absolute: not rescaled by the others", () => {
    const fleet = [replica("a", { metrics: { kvUsage: 0.25 } }), replica("b", { metrics: { kvUsage: 0.5 } }), replica("c", { metrics: { kvUsage: 1 } })];
    expect(kvCacheScores(fleet, [true, true, true])).toEqual([0.75, 0.5, 0]);
    const equal = [replica("a", { metrics: { kvUsage: 0.5 } }), replica("b", { metrics: { kvUsage: 0.5 } })];
    expect(kvCacheScores(equal, [true, true])).toEqual([0.5, 0.5]); // not 1: an absolute scale
  });

  it("gives null for an unknown or unusable usage, so the pipeline's neutral stand-in takes its place", () => {
    const fleet = [replica("a", { metrics: { kvUsage: 0.25 } }), replica("nan", { metrics: { kvUsage: Number.NaN } }), replica("none", { metrics: { kvUsage: null } }), replica("inf", { metrics: { kvUsage: Number.POSITIVE_INFINITY } })];
    expect(kvCacheScores(fleet, [true, true, true, true])).toEqual([0.75, null, null, null]);
  });

  it("gives a stale replica null and is empty for an empty fleet", () => {
    expect(kvCacheScores([replica("a", { metrics: { kvUsage: 0 } })], [false])).toEqual([null]);
    expect(kvCacheScores([], [])).toEqual([]);
  });
});

describe("prefix scorer", () => {
  const fleet = [replica("a"), replica("b"), replica("c")];

  it("is matched blocks / request blocks, 0 for a replica without a match", () => {
    expect(prefixScores(fleet, new Map([["a", 8], ["b", 2]]), 8, PURE_RATIO)).toEqual([1, 0.25, 0]);
  });

  it("is 0 everywhere for a request without blocks, and empty for an empty fleet", () => {
    expect(prefixScores(fleet, new Map(), 0, PURE_RATIO)).toEqual([0, 0, 0]);
    expect(prefixScores([], new Map([["a", 1]]), 4, PURE_RATIO)).toEqual([]);
  });

  it("with matchLengthWeight w adds w · min(1, matched / scale)²: a long match beats a high ratio of a short one", () => {
    const params = { matchLengthWeight: 0.5, matchLengthScaleBlocks: 100 };
    // a: 50 of 200 blocks: 0.5·0.25 + 0.5·0.25 = 0.25. Capped: 400 of 400 blocks → 0.5·1 + 0.5·1 = 1.
    expect(prefixScores([replica("a")], new Map([["a", 50]]), 200, params)).toEqual([0.25]);
    expect(prefixScores([replica("a")], new Map([["a", 400]]), 400, params)).toEqual([1]);
  });
});

describe("in-flight scorer", () => {
  it("scores idle replicas 1 and the busiest 0, linear between, by in-flight per unit of weight", () => {
    const fleet = [replica("idle"), replica("half", { inflight: 2 }), replica("busy", { inflight: 4 }), replica("big", { weight: 2, inflight: 4 })];
    expect(inflightScores(fleet, GAIE_INFLIGHT)).toEqual([1, 0.5, 0, 0.5]);
    expect(relativeLoad(fleet[3]!)).toBe(2);
  });

  it("scores an all-idle fleet 1 and an evenly busy one 0: equal either way", () => {
    expect(inflightScores([replica("a"), replica("b")], GAIE_INFLIGHT)).toEqual([1, 1]);
    expect(inflightScores([replica("a", { inflight: 3 }), replica("b", { inflight: 3 })], GAIE_INFLIGHT)).toEqual([0, 0]);
    expect(inflightScores([], GAIE_INFLIGHT)).toEqual([]);
  });

  it("with an idle threshold and maxBusyScore < 1, every idle replica outscores every busy one (llm-d PR #669)", () => {
    const fleet = [replica("one", { inflight: 1 }), replica("two", { inflight: 2 }), replica("ten", { inflight: 10 })];
    expect(inflightScores(fleet, { idleThreshold: 1, maxBusyScore: 0.5 })).toEqual([1, 0.4, 0]);
  });
});

describe("LoRA affinity scorer", () => {
  const m = (running: string[], waiting: string[], maxLora: number) => ({ metrics: { loraRunning: running, loraWaiting: waiting, maxLora } });

  it("has GAIE's tiers: running 1, free slot 0.8, waiting 0.6, none 0", () => {
    expect([LORA_ACTIVE, LORA_FREE_SLOT, LORA_WAITING, LORA_NONE]).toEqual([1, 0.8, 0.6, 0]);
    const fleet = [
      replica("running", m(["sql"], [], 2)),
      replica("free-slot", m(["x"], [], 2)),
      replica("waiting-full", m(["x"], ["sql"], 2)),
      replica("full", m(["x", "y"], [], 2)),
      replica("no-lora", m([], [], 0)),
    ];
    expect(loraScores(fleet, [true, true, true, true, true], "sql")).toEqual([1, 0.8, 0.6, 0, 0]);
  });

  it("ranks a free slot above waiting to load (GAIE's order), and running above both even when full", () => {
    const fleet = [replica("waiting-with-slot", m([], ["sql"], 2)), replica("running-full", m(["sql", "x"], [], 2))];
    expect(loraScores(fleet, [true, true], "sql")).toEqual([0.8, 1]);
  });

  it("scores a base-model request 1 everywhere, stale or not; a stale replica null otherwise", () => {
    const fleet = [replica("a", m(["sql"], [], 1)), replica("b", { metrics: null })];
    expect(loraScores(fleet, [true, false], null)).toEqual([1, 1]);
    expect(loraScores(fleet, [true, false], "sql")).toEqual([1, null]);
    expect(loraScores([], [], "sql")).toEqual([]);
  });
});

describe("locality scorer", () => {
  it("scores 1 for a replica sharing any of the request's location labels", () => {
    const fleet = [replica("ams", { labels: { colo: "AMS", region: "weur" } }), replica("fra", { labels: { colo: "FRA", region: "weur" } }), replica("iad", { labels: { colo: "IAD", region: "enam" } }), replica("bare")];
    expect(localityScores(fleet, { colo: "AMS" })).toEqual([1, 0, 0, 0]);
    expect(localityScores(fleet, { region: "weur" })).toEqual([1, 1, 0, 0]);
  });

  it("scores 0 everywhere for a request without location, and is empty for an empty fleet", () => {
    expect(localityScores([replica("a", { labels: { colo: "AMS" } })], {})).toEqual([0]);
    expect(localityScores([], { colo: "AMS" })).toEqual([]);
  });
});

describe("scorer registry", () => {
  it("wires each name to its scorer with the context's fields", () => {
    const fleet = [replica("a", { inflight: 2, labels: { colo: "AMS" }, metrics: { waiting: 1, kvUsage: 0.5, loraRunning: ["sql"], maxLora: 1 } }), replica("b", { metrics: null })];
    const ctx = { candidates: fleet, fresh: [true, false], request: features({ hashes: [1, 2], adapter: "sql", locality: { colo: "AMS" } }), matches: new Map([["a", 1]]), settings: DEFAULT_SETTINGS };
    expect(SCORERS.prefix.score(ctx)).toEqual([0.5, 0]);
    expect(SCORERS.queue.score(ctx)).toEqual([1, null]);
    expect(SCORERS.kvCache.score(ctx)).toEqual([0.5, null]);
    expect(SCORERS.inflight.score(ctx)).toEqual([0, 1]);
    expect(SCORERS.lora.score(ctx)).toEqual([1, null]);
    expect(SCORERS.locality.score(ctx)).toEqual([1, 0]);
  });
});
