/**
 * What an isolate sends the pool's object about the prompts it routed: each prefix once
 * per batch, the batch bounded, its own index updated at once either way.
 */
import { describe, expect, it } from "vitest";
import { poolSpec } from "../support/pool-spec";
import { PoolAgent, PREFIX_BATCH_MAX_HASHES } from "../../src/app/state/pool-agent";
import type { PoolRpc } from "../../src/app/state/stubs";
import type { PoolSpec, PoolSyncRequest, PoolView } from "../../src/core/pool/wire";
import { newCircuit } from "../../src/core/health/circuit";

const SPEC: PoolSpec = poolSpec(["a", "b"]);

function recordingAgent() {
  const sent: PoolSyncRequest[] = [];
  const rpc = {
    sync: async (request: PoolSyncRequest): Promise<PoolView> => {
      sent.push(request);
      const acked = Math.max(0, ...request.batches.map((b) => b.seq)); // every batch applied
      return { version: "v1", at: 0, acked, replicas: SPEC.replicas.map((r) => ({ id: r.id, circuit: newCircuit(), others: 0, healthy: null, metrics: null })), prefix: { cursor: 0, inserts: [] } };
    },
  } as unknown as PoolRpc;
  const agent = new PoolAgent(() => "isolate-1", SPEC, () => rpc);
  const inserts = () => sent.flatMap((r) => r.batches.flatMap((b) => b.prefix));
  return { agent, inserts };
}

const chain = (n: number, from = 1) => Array.from({ length: n }, (_, i) => from + i);

describe("an isolate's prefix inserts", () => {
  it("go out once per batch for a repeated prefix, per replica, and again in the next batch", async () => {
    const { agent, inserts } = recordingAgent();
    for (let i = 0; i < 50; i++) agent.routedPrefix({ replica: "a", hashes: chain(8) });
    agent.routedPrefix({ replica: "b", hashes: chain(8) });
    agent.routedPrefix({ replica: "a", hashes: chain(9) }); // a longer prompt is a different prefix
    await agent.flush();
    expect(inserts()).toEqual([{ replica: "a", hashes: chain(8) }, { replica: "b", hashes: chain(8) }, { replica: "a", hashes: chain(9) }]);
    agent.routedPrefix({ replica: "a", hashes: chain(8) });
    await agent.flush();
    expect(inserts()).toHaveLength(4);
    expect(agent.indexedBlocks()).toEqual({ a: 9, b: 8 });
  });

  it("stop at PREFIX_BATCH_MAX_HASHES a batch, while the isolate's own index still learns them all", async () => {
    const { agent, inserts } = recordingAgent();
    const per = 256;
    const prompts = Math.ceil(PREFIX_BATCH_MAX_HASHES / per) + 10;
    for (let i = 0; i < prompts; i++) agent.routedPrefix({ replica: "a", hashes: chain(per, 1 + i * per) });
    await agent.flush();
    const sent = inserts().reduce((n, insert) => n + insert.hashes.length, 0);
    expect(sent).toBeLessThanOrEqual(PREFIX_BATCH_MAX_HASHES);
    expect(sent).toBeGreaterThan(PREFIX_BATCH_MAX_HASHES - per);
    expect(agent.indexedBlocks().a).toBe(prompts * per);
  });
});
