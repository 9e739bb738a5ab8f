/**
 * An isolate's prefix index is sized per replica from the engines' cache_config_info as
 * its views bring them, and counts what it expected of each prompt it sent.
 */
import { describe, expect, it } from "vitest";
import { poolSpec } from "../support/pool-spec";
import { PoolAgent } from "../../src/app/state/pool-agent";
import type { PoolRpc } from "../../src/app/state/stubs";
import type { PoolSpec, PoolView } from "../../src/core/pool/wire";
import type { ReplicaMetrics } from "../../src/core/picking/vllm-metrics";
import { newCircuit } from "../../src/core/health/circuit";

const spec = (indexCapacityBlocks: number | null, ids = ["a", "b"]): PoolSpec =>
  poolSpec(ids, { version: `v-${indexCapacityBlocks}-${ids.join("")}`, indexCapacityBlocks, metrics: { scrapeMs: 1000, path: "/metrics", timeoutMs: 1000, staleMs: 5000, failureThreshold: 3 } });

const metrics = (cache: { numGpuBlocks: number | null; blockSize: number | null }): ReplicaMetrics => ({
  waiting: 0,
  running: 0,
  kvUsage: 0,
  loraRunning: [],
  loraWaiting: [],
  maxLora: null,
  ...cache,
  prefixHits: null,
  prefixQueries: null,
  itlSumS: null,
  itlCount: null,
  tpotMs: null,
  sampledAt: 0,
});

/** An agent whose pool object answers with the metrics `scraped` holds at the time. */
function agentWith(poolSpec: PoolSpec) {
  const scraped = new Map<string, ReplicaMetrics | null>();
  const rpc = {
    sync: async (request: { batches: { seq: number }[] }): Promise<PoolView> => ({
      version: poolSpec.version,
      at: 0,
      acked: Math.max(0, ...request.batches.map((b) => b.seq)),
      replicas: poolSpec.replicas.map((r) => ({ id: r.id, circuit: newCircuit(), others: 0, healthy: null, metrics: scraped.get(r.id) ?? null })),
      prefix: { cursor: 0, inserts: [] },
    }),
  } as unknown as PoolRpc;
  const agent = new PoolAgent(() => "isolate-1", poolSpec, () => rpc);
  /** A view from the object with these replicas' metrics. */
  const view = async (m: Record<string, ReplicaMetrics | null>) => {
    for (const [id, sample] of Object.entries(m)) scraped.set(id, sample);
    await agent.flush();
  };
  return { agent, view };
}

const chain = (n: number, from: number) => Array.from({ length: n }, (_, i) => from + i);

describe("an isolate's prefix index, sized from the engines", () => {
  it("starts at the default, takes each replica's engine size from its metrics, and evicts down to it", async () => {
    const { agent, view } = agentWith(spec(null));
    expect(agent.indexSizes()).toEqual({ a: { blocks: 8_192, sizedBy: "default" }, b: { blocks: 8_192, sizedBy: "default" } });
    for (let p = 0; p < 10; p++) agent.routedPrefix({ replica: "a", hashes: chain(10, p * 100) });
    expect(agent.indexedBlocks().a).toBe(100);

    await view({ a: metrics({ numGpuBlocks: 30, blockSize: 16 }), b: metrics({ numGpuBlocks: null, blockSize: null }) });
    expect(agent.indexSizes()).toEqual({ a: { blocks: 30, sizedBy: "engine" }, b: { blocks: 8_192, sizedBy: "default" } });
    expect(agent.indexedBlocks().a).toBe(30);
    // The three prompts routed last are the ones a 30-block engine still holds.
    agent.routedPrefix({ replica: "a", hashes: chain(10, 900) });
    agent.routedPrefix({ replica: "a", hashes: chain(10, 0) });
    expect(agent.expectedHits).toEqual({ hitBlocks: 10 + 0, lookedUpBlocks: 100 + 20 });
  });

  it("keeps an engine's size through scrapes that fail (its cache is fixed for its life), and follows a new one", async () => {
    const { agent, view } = agentWith(spec(null));
    await view({ a: metrics({ numGpuBlocks: 64, blockSize: 16 }) });
    await view({ a: null });
    expect(agent.indexSizes().a).toEqual({ blocks: 64, sizedBy: "engine" });
    await view({ a: metrics({ numGpuBlocks: 64, blockSize: 32 }) }); // restarted with bigger blocks
    expect(agent.indexSizes().a).toEqual({ blocks: 128, sizedBy: "engine" });
  });

  it("keeps index_capacity_blocks when it is set, whatever the engine says; a new config resizes in place", async () => {
    const poolSpec = spec(50);
    const { agent, view } = agentWith(poolSpec);
    await view({ a: metrics({ numGpuBlocks: 30, blockSize: 16 }) });
    expect(agent.indexSizes().a).toEqual({ blocks: 50, sizedBy: "config" });
    for (let p = 0; p < 5; p++) agent.routedPrefix({ replica: "a", hashes: chain(10, p * 100) });
    expect(agent.indexedBlocks().a).toBe(50);
    agent.update(spec(null));
    expect(agent.indexSizes().a).toEqual({ blocks: 30, sizedBy: "engine" });
    expect(agent.indexedBlocks().a).toBe(30); // the newest three prompts stay
  });

  it("counts expected hits per attempt against the replica it went to, before recording the prompt", () => {
    const { agent } = agentWith(spec(null));
    agent.routedPrefix({ replica: "a", hashes: chain(8, 0) }); // cold: 0 of 8
    agent.routedPrefix({ replica: "a", hashes: [...chain(6, 0), 77, 78] }); // 6 of 8 held on a
    agent.routedPrefix({ replica: "b", hashes: chain(8, 0) }); // b holds none of it
    expect(agent.expectedHits).toEqual({ hitBlocks: 6, lookedUpBlocks: 24 });
  });
});
