/** The envelope object: percentiles over its window, samples aged out, demand from isolates' counts. */
import { env } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { envelopeObjectName } from "../../src/app/state/object-names";
import type { EnvelopeNews, EnvelopeSettings, EnvelopeSync, RouteSample } from "../../src/core/routewise/wire";
import { frozenClock } from "../support/state";

const settings: EnvelopeSettings = { percentiles: [50, 90], windowMs: 60_000, latencyWindowMs: 10_000, routes: ["a", "b"] };
const stub = () => env.ROUTE_ENVELOPE.getByName(envelopeObjectName(`t-${crypto.randomUUID()}`));
const sample = (route: string, at: number, ttftMs: number): RouteSample => ({ route, at, ttftMs, totalMs: ttftMs + 100, promptTokens: 10, outputTokens: 11, cachedTokens: 0 });
/** An isolate's exchange: nothing to report, or one batch numbered `seq`. */
const nothing = (isolate: string): EnvelopeSync => ({ isolate, settings, batches: [] });
const batch = (isolate: string, seq: number, news: Partial<EnvelopeNews>): EnvelopeSync => ({ isolate, settings, batches: [{ seq, samples: [], requests: 0, counters: {}, verdicts: [], ...news }] });

let clock: ReturnType<typeof frozenClock> | null = null;
afterEach(() => {
  clock?.restore();
  clock = null;
});

describe("RouteEnvelope", () => {
  it("computes each route's percentiles from its samples; a route without any has none", async () => {
    clock = frozenClock(1_000_000);
    const object = stub();
    const view = await object.seed(settings, Array.from({ length: 10 }, (_, i) => sample("a", clock!.now, (i + 1) * 10)));
    expect(view.envelopes.a).toMatchObject({ samples: 10, ttftMs: { p50: 50, p90: 90 }, meanOutputTokens: 11 });
    expect(view.envelopes.b).toBeNull();
  });

  it("forgets samples past the envelope window, and judges the SLO only on the latency window", async () => {
    clock = frozenClock(2_000_000);
    const object = stub();
    await object.seed(settings, [sample("a", clock.now, 100)]);
    clock.advance(30_000);
    await object.seed(settings, [sample("a", clock.now, 300)]);
    clock.advance(1_000); // past the 1 s cache: percentiles are recomputed
    const both = await object.sync(nothing("i"));
    expect(both.envelopes.a).toMatchObject({ samples: 2, recent: { samples: 1 } });
    clock.advance(30_000); // the first sample is now 61 s old
    const one = await object.sync(nothing("i"));
    expect(one.envelopes.a).toMatchObject({ samples: 1, ttftMs: { p50: 300 } });
  });

  it("after a restart, a read before any sync (/routing, /metrics) does not hide the stored samples from the next sync", async () => {
    clock = frozenClock(4_000_000);
    const object = stub();
    await object.seed(settings, [sample("a", clock.now, 100), sample("b", clock.now, 200)]); // an operator's calibration
    await evictDurableObject(object); // idle: the object restarts, without the settings a sync brings
    clock.advance(10);
    await object.snapshot(); // read first: no settings yet, so no routes to summarize
    clock.advance(10); // well within the 1 s the percentiles are kept
    const view = await object.sync(nothing("i"));
    expect(view.envelopes.a).toMatchObject({ samples: 1 });
    expect(view.envelopes.b).toMatchObject({ samples: 1 });
  });

  it("adds up every isolate's requests into the model's demand, per second over the last minute", async () => {
    clock = frozenClock(3_000_000);
    const object = stub();
    await object.sync(nothing("i"));
    clock.advance(60_000);
    await object.sync(batch("i", 1, { requests: 90 }));
    const view = await object.sync(batch("j", 1, { requests: 30 }));
    expect(view.demand.requestsPerS).toBeCloseTo(2, 6); // 120 requests in 60 s
  });

  it("sums counters from every isolate", async () => {
    const object = stub();
    const spend = (value: number) => ({ routewise_spend_total: [{ labels: { route: "a" }, value }] });
    await object.sync(batch("i", 1, { requests: 1, counters: spend(0.25) }));
    await object.sync(batch("j", 1, { requests: 1, counters: spend(0.5) }));
    expect((await object.snapshot()).counters.routewise_spend_total).toEqual([{ labels: { route: "a" }, value: 0.75 }]);
  });

  it("sums request durations and keeps them across eviction; a batch's duration past an hour per request of 1,000 is a broken report and is left out", async () => {
    const object = stub();
    const durations = (ms: number) => ({ routewise_request_duration_ms: [{ labels: {}, value: ms }], routewise_model_requests_total: [{ labels: { status: "200" }, value: 1 }] });
    await object.sync(batch("i", 1, { counters: durations(120) }));
    await object.sync(batch("j", 1, { counters: durations(80) }));
    await object.sync(batch("k", 1, { counters: durations(3_600_000_001) }));
    await evictDurableObject(object);
    const { counters } = await object.snapshot();
    expect(counters.routewise_request_duration_ms).toEqual([{ labels: {}, value: 200 }]);
    expect(counters.routewise_model_requests_total).toEqual([{ labels: { status: "200" }, value: 3 }]);
  });

  it("applies a batch once when its answer was lost and it is sent again, before and after a restart", async () => {
    clock = frozenClock(4_000_000);
    const object = stub();
    const news = { samples: [sample("a", clock.now, 100), sample("a", clock.now, 200)], requests: 60, counters: { routewise_spend_total: [{ labels: { route: "a" }, value: 0.25 }] } };
    await object.sync(batch("i", 1, news)); // its answer is lost
    clock.advance(1_000); // past the percentile cache
    const resent = await object.sync(batch("i", 1, news));
    expect(resent.acked).toBe(1);
    expect(resent.envelopes.a).toMatchObject({ samples: 2 });
    expect(resent.demand.requestsPerS).toBeCloseTo(60 / 5, 6); // 60 requests over the 5 s the model has been seen, not 120
    expect((await object.snapshot()).counters.routewise_spend_total).toEqual([{ labels: { route: "a" }, value: 0.25 }]);
    // The samples and the applied seq were stored together: after a restart the resend still adds nothing.
    await evictDurableObject(object);
    clock.advance(1_000);
    const afterRestart = await object.sync(batch("i", 1, news));
    expect(afterRestart.acked).toBe(1);
    expect(afterRestart.envelopes.a).toMatchObject({ samples: 2 });
  });

  it("keeps its counters across eviction: a restart neither loses them nor counts a resent batch twice", async () => {
    clock = frozenClock(4_500_000);
    const object = stub();
    const counters = (spend: number, output: number) => ({
      routewise_spend_total: [{ labels: { route: "a" }, value: spend }],
      routewise_tokens_total: [{ labels: { route: "a", kind: "output" }, value: output }],
    });
    await object.sync(batch("i", 1, { requests: 1, counters: counters(0.25, 40) }));
    await object.sync(batch("j", 1, { requests: 1, counters: counters(0.5, 2) }));
    await evictDurableObject(object);
    const after = await object.snapshot();
    expect(after.counters.routewise_spend_total).toEqual([{ labels: { route: "a" }, value: 0.75 }]);
    expect(after.counters.routewise_tokens_total).toEqual([{ labels: { route: "a", kind: "output" }, value: 42 }]);
    // Isolate j's batch 1 was applied before the restart: resent after it, it adds nothing; its batch 2 adds.
    await object.sync(batch("j", 1, { requests: 1, counters: counters(0.5, 2) }));
    await object.sync(batch("j", 2, { requests: 1, counters: counters(1, 1) }));
    await evictDurableObject(object);
    expect((await object.snapshot()).counters.routewise_spend_total).toEqual([{ labels: { route: "a" }, value: 1.75 }]);
  });

  it("folds every isolate's route verdicts into the route's shared circuit, once per batch", async () => {
    clock = frozenClock(5_000_000);
    const object = stub();
    const failures = (n: number) => ({ verdicts: Array.from({ length: n }, () => ({ route: "b", ok: false, at: clock!.now })) });
    await object.sync(batch("i", 1, failures(2)));
    await object.sync(batch("i", 1, failures(2))); // resent: not counted again
    expect((await object.sync(batch("j", 1, failures(2)))).circuits.b).toMatchObject({ phase: "closed", consecutiveFailures: 4 });
    const tripped = await object.sync(batch("j", 2, failures(1)));
    expect(tripped.circuits.b).toMatchObject({ phase: "open", reopenAt: clock.now + 30_000 });
    expect(tripped.circuits.a).toBeUndefined();
    await evictDurableObject(object);
    expect((await object.sync(nothing("k"))).circuits.b).toMatchObject({ phase: "open", reopenAt: clock.now + 30_000 });
    // Past the cooldown the first verdict decides: a success closes it.
    clock.advance(30_000);
    expect((await object.sync(batch("k", 1, { verdicts: [{ route: "b", ok: true, at: clock.now }] }))).circuits.b).toMatchObject({ phase: "closed" });
  });
});
