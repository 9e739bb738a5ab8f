/** The pool object's rules, pure: time is an argument, probe tokens come from a counter, writes come out as data. */
import { describe, expect, it } from "vitest";
import { DEFAULT_CIRCUIT_POLICY } from "../../src/core/health/circuit";
import { readVllmMetrics } from "../../src/core/picking/vllm-metrics";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { ISOLATE_REPORT_TTL_MS, PoolMachine } from "../../src/core/pool/machine";
import { SPEC_UNTOLD_MS } from "../../src/core/state/untold";
import { scrapeTimeoutMs } from "../../src/core/pool/replica-checks";
import type { OutcomeReport, PoolNews, PoolSpec, PoolSyncRequest, Verdict } from "../../src/core/pool/wire";

const spec = (over: Partial<PoolSpec> = {}): PoolSpec => ({
  pool: "p",
  version: "v1",
  policy: "least_loaded",
  failOpen: false,
  circuit: { ...DEFAULT_CIRCUIT_POLICY, consecutive_failures: 2, cooldown_ms: 1_000, half_open_probes: 1 },
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
    { id: "b", url: "http://b", weight: 1, labels: {}, apiKey: "sk-replica-b" },
  ],
  ...over,
});

/** Tokens t1, t2, … in order. */
const machine = () => {
  let n = 0;
  return new PoolMachine(() => `t${++n}`);
};
const outcome = (replica: string, verdict: Verdict, at: number, probe: string | null = null): OutcomeReport => ({ replica, verdict, at, probe });
const news = (seq: number, over: Partial<PoolNews> = {}) => ({ seq, outcomes: [], prefix: [], requests: [], attempts: [], fallbacks: [], ...over });
const sync = (isolate: string, batches: ReturnType<typeof news>[], over: Partial<PoolSyncRequest> = {}): PoolSyncRequest => ({
  isolate,
  seq: 1,
  spec: null,
  inflight: {},
  prefixCursor: 0,
  batches,
  ...over,
});
/** A vLLM /metrics answer read at `at`, with its inter-token latency histogram's sum (s) and count. */
const scrape = (itlSumS: number, itlCount: number, at: number) => {
  const text = `vllm:num_requests_waiting 4\nvllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0.5\nvllm:inter_token_latency_seconds_sum ${itlSumS}\nvllm:inter_token_latency_seconds_count ${itlCount}\n`;
  const sample = readVllmMetrics(text, at);
  if (!sample) throw new Error("the fixture is not a vLLM answer");
  return sample;
};
const probe = (replica = "a", ttlMs = 60_000) => ({ spec: spec(), replica, ttlMs });
/** A machine with the spec adopted and replica a tripped open at `at` (reopens at + 1 s). */
const tripped = (at = 0) => {
  const m = machine();
  m.adopt(spec(), at);
  m.sync(sync("i0", [news(1, { outcomes: [outcome("a", "failure", at), outcome("a", "failure", at)] })]), at);
  return m;
};

describe("PoolMachine: spec adoption", () => {
  it("stores a spec without the replicas' api keys, keeps them in memory, and stores only a newer version", () => {
    const m = machine();
    const first = m.adopt(spec({ version: "v2" }), 0);
    expect(first.spec!.replicas.map((r) => r.apiKey)).toEqual([undefined, undefined]);
    expect(JSON.stringify(first.spec)).not.toContain("sk-replica-b");
    expect(m.spec!.replicas[1]!.apiKey).toBe("sk-replica-b");
    expect(m.adopt(spec({ version: "v1" }), 1).spec).toBeNull(); // older: an isolate mid-rollout
    expect(m.adopt(spec({ version: "v2" }), 2).spec).toBeNull();
    expect(m.spec!.version).toBe("v2");
  });

  it("a pool no config names any more: its checks stop SPEC_UNTOLD_MS after the last telling, its keys are forgotten, and a telling starts them again", () => {
    const m = machine();
    const checked = spec({ healthCheckS: 10 });
    expect(m.adopt(checked, 0).alarm).not.toBeNull();
    // Isolates routing to it keep it told, with or without a spec in their sync.
    m.sync(sync("i1", [], { spec: null }), SPEC_UNTOLD_MS / 2);
    expect(m.checksDue(SPEC_UNTOLD_MS)).not.toBeNull();
    expect(m.checksDue(SPEC_UNTOLD_MS / 2 + SPEC_UNTOLD_MS)).not.toBeNull();
    // Then no one names it (the cron's config no longer has it; no isolate routes to it).
    expect(m.checksDue(SPEC_UNTOLD_MS / 2 + SPEC_UNTOLD_MS + 1)).toBeNull();
    expect(m.spec!.replicas[1]!.apiKey).toBeUndefined();
    // Named again (the pool came back): the alarm is armed again, the keys come with the spec.
    const writes = m.adopt(checked, 2 * SPEC_UNTOLD_MS);
    expect(writes.alarm).toMatchObject({ replace: true });
    expect(m.spec!.replicas[1]!.apiKey).toBe("sk-replica-b");
    expect(m.checksDue(2 * SPEC_UNTOLD_MS + 10_000)).toMatchObject({ health: true });
  });

  it("after a restart, the stored version told again brings the keys back without storing anything", () => {
    const stored = machine().adopt(spec(), 0).spec!;
    const m = machine();
    m.restoreSpec(stored, 0);
    expect(m.spec!.replicas[1]!.apiKey).toBeUndefined();
    const writes = m.adopt(spec(), 1);
    expect(writes.spec).toBeNull();
    expect(writes.alarm).toBeNull();
    expect(m.spec!.replicas[1]!.apiKey).toBe("sk-replica-b");
  });

  it("forgets a replica that left: its rows go, and so do its circuit, health and prefix inserts", () => {
    const m = machine();
    m.adopt(spec(), 0);
    m.healthChecked(spec(), [{ id: "b", healthy: false }], 0);
    m.sync(sync("i1", [news(1, { prefix: [{ replica: "b", hashes: [1, 2] }] })]), 0);
    const writes = m.adopt(spec({ version: "v2", replicas: [spec().replicas[0]!] }), 1);
    expect(writes.removed).toEqual(["b"]);
    expect(m.sync(sync("i2", []), 2).view.prefix.inserts).toEqual([]);
    expect(m.snapshot(2).snapshot.replicas.map((r) => r.id)).toEqual(["a"]);
  });

  it("moves the alarm: soon for a new pool, replaced when the timers change, kept otherwise, deleted when both are off", () => {
    const m = machine();
    expect(m.adopt(spec({ healthCheckS: 10 }), 5_000).alarm).toEqual({ at: 6_000, replace: true });
    expect(m.adopt(spec({ version: "v2", healthCheckS: 10 }), 6_000).alarm).toEqual({ at: 7_000, replace: false });
    expect(m.adopt(spec({ version: "v3", healthCheckS: 10, metrics: { ...spec().metrics, scrapeMs: 500 } }), 7_000).alarm).toEqual({ at: 7_500, replace: true });
    expect(m.adopt(spec({ version: "v4" }), 8_000).alarm).toBe("delete");
  });
});

describe("PoolMachine: batches", () => {
  it("applies a resent batch once: its failures and counters count once, and the applied seq is stored only with a circuit row", () => {
    const m = machine();
    m.adopt(spec(), 0);
    const requests = [{ labels: { model: "m", replica: "a", status: "502" }, value: 1 }];
    const first = news(1, { outcomes: [outcome("a", "failure", 0)], requests });
    const stored = m.sync(sync("i1", [first]), 0);
    expect(stored.view.acked).toBe(1);
    expect(stored.writes.applied).toBe("i1");
    expect(stored.writes.circuits.get("a")).toMatchObject({ phase: "closed", consecutiveFailures: 1 });
    // The answer was lost: batch 1 comes again, with batch 2 (counters only: nothing stored).
    const again = m.sync(sync("i1", [first, news(2, { requests })]), 100);
    expect(again.view.acked).toBe(2);
    expect(again.writes.applied).toBeNull();
    expect(again.writes.circuits.size).toBe(0);
    expect(again.view.replicas[0]!.circuit).toMatchObject({ phase: "closed", consecutiveFailures: 1 });
    expect(m.snapshot(100).snapshot.requests).toEqual([{ labels: requests[0]!.labels, value: 2 }]);
  });

  it("counts each isolate's in-flight for the others, not for itself, until its reports expire", () => {
    const m = machine();
    m.adopt(spec(), 0);
    m.sync(sync("i1", [], { inflight: { a: 2 } }), 0);
    expect(m.sync(sync("i2", [], { inflight: { a: 3 } }), 0).view.replicas[0]!.others).toBe(2);
    expect(m.sync(sync("i2", [], { seq: 2, inflight: { a: 3 } }), ISOLATE_REPORT_TTL_MS).view.replicas[0]!.others).toBe(0);
    expect(m.snapshot(ISOLATE_REPORT_TTL_MS).snapshot.replicas[0]!.inflight).toBe(3);
  });
});

describe("PoolMachine: half-open probes", () => {
  it("admits one probe across the pool once the cooldown has passed, with a fresh token", () => {
    const m = tripped();
    expect(m.admitProbe(probe(), 999).result).toMatchObject({ admission: "no", token: null });
    const admitted = m.admitProbe(probe(), 1_000);
    expect(admitted.result).toMatchObject({ admission: "probe", token: "t1", circuit: { phase: "half_open", probesInFlight: 1 } });
    expect(admitted.writes.transitions).toEqual([{ replica: "a", transition: { from: "open", to: "half_open", reason: "cooldown elapsed" } }]);
    expect(m.admitProbe(probe(), 1_001).result).toMatchObject({ admission: "no", token: null });
  });

  it("a probe's token releases its slot once: reported again, it is a plain outcome", () => {
    const m = tripped();
    m.admitProbe(probe(), 1_000);
    m.sync(sync("i1", [news(1, { outcomes: [outcome("a", "neutral", 1_100, "t1")] })]), 1_100);
    expect(m.admitProbe(probe(), 1_200).result).toMatchObject({ admission: "probe", token: "t2" });
    // t1 once more, in a later batch (a bug or a replay): t2's slot must stay held.
    m.sync(sync("i1", [news(2, { outcomes: [outcome("a", "neutral", 1_300, "t1")] })]), 1_300);
    expect(m.admitProbe(probe(), 1_400).result.admission).toBe("no");
  });

  it("frees the slot of a probe never reported once its token expires, looking at most once a second", () => {
    const m = tripped();
    m.admitProbe(probe("a", 5_000), 1_000); // expires at 6 s
    expect(m.admitProbe(probe(), 5_999).result.admission).toBe("no"); // swept at 5.999 s: not expired yet
    expect(m.admitProbe(probe(), 6_000).result.admission).toBe("no"); // expired, but the next sweep is at 6.999 s
    expect(m.admitProbe(probe(), 6_999).result).toMatchObject({ admission: "probe", token: "t2" });
  });

  it("a successful probe closes the circuit, and the closing is stored with the batch's applied seq", () => {
    const m = tripped();
    m.admitProbe(probe(), 1_000);
    const { view, writes } = m.sync(sync("i1", [news(1, { outcomes: [outcome("a", "success", 1_100, "t1")] })]), 1_100);
    expect(view.replicas[0]!.circuit.phase).toBe("closed");
    expect(writes.circuits.get("a")!.phase).toBe("closed");
    expect(writes.applied).toBe("i1");
    expect(m.snapshot(1_100).snapshot.transitions.map((s) => `${s.labels.from}>${s.labels.to}`)).toEqual(["closed>open", "open>half_open", "half_open>closed"]);
  });
});

describe("PoolMachine: health checks and scrapes", () => {
  it("checks health every health_check seconds even when the alarm comes sooner for scrapes", () => {
    const m = machine();
    expect(m.checksDue(0)).toBeNull();
    const s = spec({ healthCheckS: 10, metrics: { ...spec().metrics, scrapeMs: 2_000 } });
    m.adopt(s, 0);
    expect(m.checksDue(0)).toMatchObject({ health: true, scrape: true, nextInMs: 2_000 });
    expect(m.checksDue(2_000)).toMatchObject({ health: false, scrape: true });
    expect(m.checksDue(10_000)).toMatchObject({ health: true, scrape: true });
  });

  it("health results become rows and feed the circuits", () => {
    const m = machine();
    m.adopt(spec(), 0);
    const first = m.healthChecked(spec(), [{ id: "a", healthy: false }, { id: "b", healthy: true }], 100);
    expect([...first.health]).toEqual([["a", { healthy: false, checkedAt: 100 }], ["b", { healthy: true, checkedAt: 100 }]]);
    expect(first.transitions).toEqual([]);
    const second = m.healthChecked(spec(), [{ id: "a", healthy: false }], 200);
    expect(second.circuits.get("a")!.phase).toBe("open");
    expect(second.transitions[0]!.transition).toMatchObject({ from: "closed", to: "open" });
    expect(m.snapshot(200).snapshot.replicas.map((r) => [r.id, r.healthy, r.checkedAt])).toEqual([["a", false, 200], ["b", true, 100]]);
  });

  it("a good scrape's TPOT comes from the histogram's growth since the sample before", () => {
    const m = machine();
    m.adopt(spec(), 0);
    m.scraped(spec(), [["a", scrape(1, 100, 50)]]);
    m.scraped(spec(), [["a", scrape(3, 200, 60)]]);
    expect(m.sync(sync("i", []), 0).view.replicas[0]!.metrics).toMatchObject({ tpotMs: 20, sampledAt: 60 });
  });

  it("a failed scrape keeps the last good sample until failure_threshold failures in a row drop it", () => {
    const m = machine();
    m.adopt(spec(), 0);
    m.scraped(spec(), [["a", scrape(1, 100, 50)]]);
    m.scraped(spec(), [["a", null]]);
    m.scraped(spec(), [["a", null]]);
    const view = () => m.sync(sync("i", []), 0).view.replicas[0]!.metrics;
    expect(view()).toMatchObject({ waiting: 4, sampledAt: 50 });
    m.scraped(spec(), [["a", null]]);
    expect(view()).toBeNull();
    expect(m.snapshot(0).snapshot.replicas[0]!.scrapeFailures).toBe(3);
  });

  it("keeps when a replica's scrape last succeeded after its sample is dropped; null for one never scraped", () => {
    const m = machine();
    m.adopt(spec(), 0);
    m.scraped(spec(), [["a", scrape(1, 100, 50)]]);
    for (let i = 0; i < 3; i++) m.scraped(spec(), [["a", null], ["b", null]]);
    const [a, b] = m.snapshot(0).snapshot.replicas;
    expect(a).toMatchObject({ metrics: null, scrapeFailures: 3, scrapedAt: 50 });
    expect(b).toMatchObject({ metrics: null, scrapeFailures: 3, scrapedAt: null });
  });

  it("drops a scrape's answer for a replica the pool no longer has", () => {
    const m = machine();
    m.adopt(spec(), 0);
    m.adopt(spec({ version: "v2", replicas: [spec().replicas[0]!] }), 10);
    m.scraped(spec(), [["a", scrape(1, 100, 50)], ["b", scrape(2, 100, 50)]]);
    m.adopt(spec({ version: "v3" }), 20); // b is back, with nothing scraped since
    expect(m.snapshot(20).snapshot.replicas.map((r) => [r.id, r.scrapedAt])).toEqual([["a", 50], ["b", null]]);
  });

  it("cuts a replica's scrape timeout to the interval", () => {
    expect(scrapeTimeoutMs(spec({ metrics: { ...spec().metrics, scrapeMs: 1_000, timeoutMs: 1_000 } }))).toBe(1_000);
    expect(scrapeTimeoutMs(spec({ metrics: { ...spec().metrics, scrapeMs: 250, timeoutMs: 1_000 } }))).toBe(250);
    expect(scrapeTimeoutMs(spec({ metrics: { ...spec().metrics, scrapeMs: 10_000, timeoutMs: 2_000 } }))).toBe(2_000);
  });
});

describe("request durations", () => {
  it("adds each batch's sums per model once, and leaves out a sum no batch can hold", () => {
    const m = machine();
    m.adopt(spec(), 0);
    const durations = (value: number) => [{ labels: { model: "m" }, value }];
    const first = news(1, { durationMs: durations(250) });
    m.sync(sync("i1", [first]), 0);
    m.sync(sync("i1", [first, news(2, { durationMs: durations(100) })]), 10); // batch 1 again: counted once
    m.sync(sync("i2", [news(1, { durationMs: [...durations(Number.NaN), ...durations(-5), ...durations(1e15)] })]), 20);
    m.sync(sync("i3", [news(1)]), 30); // an isolate from before the field
    expect(m.snapshot(40).snapshot.durationMs).toEqual([{ labels: { model: "m" }, value: 350 }]);
  });
});
