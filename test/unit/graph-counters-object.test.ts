/** A graph's counters object: every isolate's batches summed once each, kept across eviction, bounded. */
import { env } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { graphCountersObjectName } from "../../src/app/state/object-names";
import type { GraphCountersSync, GraphNews } from "../../src/core/graph/graph-counters";

const stub = () => env.GRAPH_COUNTERS.getByName(graphCountersObjectName(`t-${crypto.randomUUID()}`));
const batch = (isolate: string, seq: number, counters: GraphNews["counters"]): GraphCountersSync => ({ isolate, batches: [{ seq, counters }] });
const ended = (model: string, status: string, ms: number): GraphNews["counters"] => ({
  graph_requests_total: [{ labels: { model, status }, value: 1 }],
  graph_request_duration_ms: [{ labels: { model }, value: ms }],
});

describe("GraphCounters", () => {
  it("sums every isolate's requests and durations, a resent batch once, before and after an eviction", async () => {
    const object = stub();
    expect(await object.sync(batch("i", 1, ended("m", "200", 120)))).toEqual({ acked: 1 });
    await object.sync(batch("j", 1, ended("m", "200", 80)));
    await object.sync(batch("j", 1, ended("m", "200", 80))); // its answer was lost: sent again
    await evictDurableObject(object);
    await object.sync(batch("j", 1, ended("m", "200", 80))); // and again after a restart
    await object.sync(batch("j", 2, ended("m", "502", 5)));
    const counters = await object.snapshot();
    expect(counters.graph_requests_total).toEqual([{ labels: { model: "m", status: "200" }, value: 2 }, { labels: { model: "m", status: "502" }, value: 1 }]);
    expect(counters.graph_request_duration_ms).toEqual([{ labels: { model: "m" }, value: 205 }]);
  });

  it("leaves out a batch's duration past an hour per request of 1,000, unknown families, and negative or non-finite amounts", async () => {
    const object = stub();
    await object.sync(batch("i", 1, { graph_request_duration_ms: [{ labels: { model: "m" }, value: 3_600_000_001 }], other_total: [{ labels: {}, value: 1 }], graph_requests_total: [{ labels: { model: "m", status: "200" }, value: -1 }] }));
    await object.sync(batch("i", 2, { graph_requests_total: [{ labels: { model: "m", status: "200" }, value: Number.POSITIVE_INFINITY }] }));
    expect(await object.snapshot()).toEqual({ graph_requests_total: [], graph_request_duration_ms: [] });
  });

  it("holds at most 10,000 label sets: past that a new one is refused, one it holds still counts", async () => {
    const object = stub();
    const many = Array.from({ length: 10_001 }, (_, i) => ({ labels: { model: `m${i}`, status: "200" }, value: 1 }));
    await object.sync(batch("i", 1, { graph_requests_total: many }));
    await object.sync(batch("i", 2, { graph_requests_total: [{ labels: { model: "m0", status: "200" }, value: 1 }] }));
    const counters = (await object.snapshot()).graph_requests_total!;
    expect(counters).toHaveLength(10_000);
    expect(counters.find((s) => s.labels.model === "m0")!.value).toBe(2);
    expect(counters.some((s) => s.labels.model === "m10000")).toBe(false);
  });
});
