/**
 * A burst of one prompt within one isolate (issue 18): the isolate counts its own picks at
 * once, so however stale its view of the other isolates and the engines, the busy cap
 * never lets one replica run past its cap while another is below its fair share, and the
 * prompt spreads instead of herding.
 */
import { describe, expect, it } from "vitest";
import { poolSpec } from "../support/pool-spec";
import { PoolAgent } from "../../src/app/state/pool-agent";
import type { PoolRpc } from "../../src/app/state/stubs";
import type { PoolSpec, PoolView } from "../../src/core/pool/wire";
import { busyCaps } from "../../src/core/picking/pickers/busy-cap";
import { newCircuit } from "../../src/core/health/circuit";
import { features, metrics, replica } from "../support/candidates";
import { seeded } from "../support/seeded-random";

const IDS = ["r0", "r1", "r2", "r3"];
const SPEC: PoolSpec = poolSpec(IDS, { metrics: { scrapeMs: 250, path: "/metrics", timeoutMs: 1000, staleMs: 5000, failureThreshold: 3 } });

/** An agent whose view says the other isolates run `others` and every engine is idle: both a burst behind. */
async function laggingAgent(others: number[], now: number): Promise<PoolAgent> {
  const view: PoolView = {
    version: "v1",
    at: now,
    acked: 0,
    replicas: IDS.map((id, i) => ({ id, circuit: newCircuit(), others: others[i]!, healthy: null, metrics: metrics({ sampledAt: now }) })),
    prefix: { cursor: 0, inserts: [] },
  };
  const rpc = { sync: async (): Promise<PoolView> => view } as unknown as PoolRpc;
  const agent = new PoolAgent(() => "isolate-1", SPEC, () => rpc, () => now);
  await agent.flush();
  return agent;
}

const PROMPT = Array.from({ length: 47 }, (_, i) => 1_000 + i); // one shared system prompt: 47 blocks

describe("a burst of one prompt within one isolate, on a lagging view", () => {
  // 16 requests (the fleet's slots in bench:quality's burst), none finishing; 50 seeds.
  it("never puts a replica over its cap while another is below its fair share, and spreads over every replica", async () => {
    const now = 1_000_000;
    for (let seed = 1; seed <= 50; seed++) {
      const agent = await laggingAgent([1, 0, 0, 0], now);
      const random = seeded(seed);
      const own = IDS.map(() => 0);
      for (let r = 0; r < 16; r++) {
        const request = features({ hashes: [...PROMPT, 5_000_000 + r] });
        const before = IDS.map((id) => agent.load(id));
        const chosen = agent.choose(null, null, random, now, request).order[0]!;
        agent.lease(chosen, agent.openingOf(request));
        agent.routedPrefix({ replica: chosen, hashes: [...request.hashes] });
        own[IDS.indexOf(chosen)]!++;

        const candidates = IDS.map((id, i) => replica(id, { inflight: before[i]! }));
        const cap = busyCaps(before, candidates, { loadFactor: SPEC.scoring.switchyard.busyLoadFactor, floor: SPEC.scoring.switchyard.busyFloor });
        const fair = (before.reduce((a, b) => a + b, 0) + 1) / IDS.length;
        const i = IDS.indexOf(chosen);
        const after = agent.load(chosen);
        expect(after).toBe(before[i]! + 1); // counted the moment it was picked
        if (after > cap[i]!) expect(before.every((l, k) => k === i || l >= fair), `seed ${seed}, pick ${r}: ${before} -> ${chosen}`).toBe(true);
      }
      // Spread: every replica took part of the prompt, none more than 5 of the 16 (an even split is 4; 5 seen).
      expect(own.every((n) => n > 0), `seed ${seed}: ${own}`).toBe(true);
      expect(Math.max(...own), `seed ${seed}: ${own}`).toBeLessThanOrEqual(5);
    }
  });
});
