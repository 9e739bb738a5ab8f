/**
 * The pool's object reads its replicas' own metrics (vLLM's /metrics) on its alarm, and
 * every isolate's view carries the last good sample with its time. Failing scrapes keep
 * the sample until failure_threshold, then drop it, and never touch a circuit.
 */
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import { publish } from "../support/router";
import { frozenClock, poolStub, runPoolAlarm, statefulConfig } from "../support/state";
import { MAX_METRICS_SERIES } from "../../src/core/picking/vllm-metrics";
import { MAX_METRICS_BYTES } from "../../src/platform/objects/replica-probes";

const servers = serversClosedAfterEach();
let time: ReturnType<typeof frozenClock> | undefined;
afterEach(() => {
  time?.restore();
  time = undefined;
});

const vllm = (waiting: number, kv: number) =>
  `vllm:num_requests_waiting{model_name="m"} ${waiting}\nvllm:num_requests_running{model_name="m"} 2\nvllm:kv_cache_usage_perc{model_name="m"} ${kv}\nvllm:cache_config_info{block_size="16",num_gpu_blocks="1000"} 1\n`;
const alarmOf = (pool: string) => runInDurableObject(poolStub(pool), (_instance, state) => state.storage.getAlarm());
const replicaState = async (pool: string, id: string) => (await poolStub(pool).snapshot()).replicas.find((r) => r.id === id)!;

describe("metrics scraping", () => {
  it("reads each replica's /metrics on the alarm, time-stamped, and keeps scraping at scrape_ms", async () => {
    const [a, b] = await servers([{ metrics: vllm(7, 0.5) }, { metrics: vllm(0, 0.1) }], "scrape-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }, { id: "b", url: b!.url }], poolExtra: "metrics: { scrape_ms: 1000 }" });
    await publish(config.yaml);
    await expect.poll(() => alarmOf(config.pool), { timeout: 3_000, interval: 20 }).not.toBeNull(); // armed at publish
    time = frozenClock();
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect((await replicaState(config.pool, "a")).metrics).toMatchObject({ waiting: 7, running: 2, kvUsage: 0.5, blockSize: 16, numGpuBlocks: 1000, sampledAt: time.now });
    expect((await replicaState(config.pool, "b")).metrics).toMatchObject({ waiting: 0, kvUsage: 0.1 });
    const next = await alarmOf(config.pool);
    expect(next).not.toBeNull(); // re-armed for the next scrape
    expect((await a!.stats()).byPath["/metrics"]).toBe(1);
  });

  it("keeps the last sample through failed scrapes until failure_threshold, then drops it; circuits untouched", async () => {
    const [a] = await servers([{ metrics: vllm(3, 0.2) }], "scrapefail-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }], poolExtra: "metrics: { scrape_ms: 1000, failure_threshold: 2 }" });
    await publish(config.yaml);
    await expect.poll(() => alarmOf(config.pool), { timeout: 3_000, interval: 20 }).not.toBeNull();
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    const first = (await replicaState(config.pool, "a")).metrics;
    expect(first).toMatchObject({ waiting: 3 });

    await a!.setBehaviour({}); // /metrics now answers 404
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "a")).toMatchObject({ metrics: first, scrapeFailures: 1, circuit: "closed" });
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "a")).toMatchObject({ metrics: null, scrapeFailures: 2, circuit: "closed" });

    await a!.setBehaviour({ metrics: vllm(1, 0.3) });
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "a")).toMatchObject({ metrics: { waiting: 1 }, scrapeFailures: 0 });
  });

  it("reads NaN, +Inf, -Inf and 1e308 as unknown for that metric of that replica only", async () => {
    const text = (waiting: string, running: string, kv: string) =>
      `vllm:num_requests_waiting{model_name="m"} ${waiting}\nvllm:num_requests_running{model_name="m"} ${running}\nvllm:kv_cache_usage_perc{model_name="m"} ${kv}\n`;
    const [inf, nan, big, good] = await servers([{ metrics: text("+Inf", "1", "0.2") }, { metrics: text("3", "NaN", "-Inf") }, { metrics: text("1e308", "2", "0.3") }, { metrics: text("2", "1", "0.4") }], "scrapenan-");
    const config = statefulConfig({ replicas: [{ id: "inf", url: inf!.url }, { id: "nan", url: nan!.url }, { id: "big", url: big!.url }, { id: "good", url: good!.url }], poolExtra: "metrics: { scrape_ms: 60000 }" });
    await publish(config.yaml);
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "inf")).toMatchObject({ metrics: { waiting: null, running: 1, kvUsage: 0.2 }, scrapeFailures: 0 });
    expect(await replicaState(config.pool, "nan")).toMatchObject({ metrics: { waiting: 3, running: null, kvUsage: null }, scrapeFailures: 0 });
    expect(await replicaState(config.pool, "big")).toMatchObject({ metrics: { waiting: null, running: 2, kvUsage: 0.3 }, scrapeFailures: 0 });
    expect(await replicaState(config.pool, "good")).toMatchObject({ metrics: { waiting: 2, running: 1, kvUsage: 0.4 }, scrapeFailures: 0 });
  });

  it("fails the scrape of a replica whose metrics body is over MAX_METRICS_BYTES or has too many series, with the reason recorded; the others are read", async () => {
    const padding = `# ${"x".repeat(1_000)}\n`.repeat(Math.ceil(MAX_METRICS_BYTES / 1_000)); // comments only: parsed whole, it would read fine
    const [huge, many, good] = await servers([{ metrics: vllm(1, 0.1) + padding }, { metrics: vllm(1, 0.1) + "other 1\n".repeat(MAX_METRICS_SERIES) }, { metrics: vllm(2, 0.2) }], "scrapehuge-");
    const config = statefulConfig({ replicas: [{ id: "huge", url: huge!.url }, { id: "many", url: many!.url }, { id: "good", url: good!.url }], poolExtra: "metrics: { scrape_ms: 60000 }" });
    await publish(config.yaml);
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "huge")).toMatchObject({ metrics: null, scrapeFailures: 1, scrapeError: `metrics body over ${MAX_METRICS_BYTES} bytes`, circuit: "closed" });
    expect(await replicaState(config.pool, "many")).toMatchObject({ metrics: null, scrapeFailures: 1, scrapeError: `more than ${MAX_METRICS_SERIES} samples` });
    expect(await replicaState(config.pool, "good")).toMatchObject({ metrics: { waiting: 2 }, scrapeFailures: 0, scrapeError: null });
    // Fixed, the replica is read again and its error cleared.
    await huge!.setBehaviour({ metrics: vllm(4, 0.1) });
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "huge")).toMatchObject({ metrics: { waiting: 4 }, scrapeFailures: 0, scrapeError: null });
  });

  it("is off by default: no alarm, no /metrics calls", async () => {
    const [a] = await servers([{ metrics: vllm(1, 0.1) }], "noscrape-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }] });
    await publish(config.yaml);
    expect(await runPoolAlarm(poolStub(config.pool))).toBe(false);
    expect((await a!.stats()).byPath["/metrics"] ?? 0).toBe(0);
  });
});
