/**
 * The pool's object reads its replicas' own metrics (vLLM's /metrics) on its alarm, and
 * every isolate's view carries the last good sample with its time. Failing scrapes keep
 * the sample until failure_threshold, then drop it, and never touch a circuit.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import { publish } from "../support/router";
import { frozenClock, poolStub, statefulConfig } from "../support/state";

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
    expect(await runDurableObjectAlarm(poolStub(config.pool))).toBe(true);
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
    expect(await runDurableObjectAlarm(poolStub(config.pool))).toBe(true);
    const first = (await replicaState(config.pool, "a")).metrics;
    expect(first).toMatchObject({ waiting: 3 });

    await a!.setBehaviour({}); // /metrics now answers 404
    expect(await runDurableObjectAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "a")).toMatchObject({ metrics: first, scrapeFailures: 1, circuit: "closed" });
    expect(await runDurableObjectAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "a")).toMatchObject({ metrics: null, scrapeFailures: 2, circuit: "closed" });

    await a!.setBehaviour({ metrics: vllm(1, 0.3) });
    expect(await runDurableObjectAlarm(poolStub(config.pool))).toBe(true);
    expect(await replicaState(config.pool, "a")).toMatchObject({ metrics: { waiting: 1 }, scrapeFailures: 0 });
  });

  it("is off by default: no alarm, no /metrics calls", async () => {
    const [a] = await servers([{ metrics: vllm(1, 0.1) }], "noscrape-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }] });
    await publish(config.yaml);
    expect(await runDurableObjectAlarm(poolStub(config.pool))).toBe(false);
    expect((await a!.stats()).byPath["/metrics"] ?? 0).toBe(0);
  });
});
