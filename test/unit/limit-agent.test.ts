/**
 * One isolate's limit agent (src/app/state/limits/limit-agent.ts) against the object's own
 * machine (src/core/limits/allowance.ts) behind a plain RPC: what it asks for, and when.
 */
import { describe, expect, it } from "vitest";
import { clock } from "../../src/lib/clock";
import { LimitAgent, type LimitsRpc } from "../../src/app/state/limits/limit-agent";
import { Allowance } from "../../src/core/limits/allowance";
import type { BucketLimits, LimitSync } from "../../src/core/limits/wire";

const CONCURRENT: BucketLimits = { concurrent: { total: 100, window: "none" } };

function agentWithObject(limits: BucketLimits) {
  const allowance = new Allowance();
  const syncs: LimitSync[] = [];
  const rpc: LimitsRpc = {
    sync: async (request) => {
      syncs.push(request);
      return allowance.sync(request, Date.now());
    },
    snapshot: async () => allowance.snapshot(Date.now()),
  };
  const background: Promise<unknown>[] = [];
  const keeper = { waitUntil: (p: Promise<unknown>) => void background.push(p) };
  const agent = new LimitAgent(() => "isolate-a", "key=alice", limits, () => rpc);
  const settleBackground = async () => {
    while (background.length > 0) await Promise.all(background.splice(0));
  };
  return { agent, syncs, keeper, settleBackground };
}

describe("LimitAgent", () => {
  it("asks for a refill as soon as a reservation leaves its grant low, before any request settles: the next request in flight reserves without waiting", async () => {
    const { agent, syncs, keeper, settleBackground } = agentWithObject(CONCURRENT);
    // A cold isolate's first request waits for a grant sized to it: one request in flight.
    const first = await agent.reserveWaiting({ concurrent: 1 }, keeper);
    expect(first.ok).toBe(true);
    expect(syncs[0]!.hold.concurrent).toBe(1);
    await settleBackground();
    // Its reservation left nothing spare, so it asked again at once, for headroom over the peak.
    expect(syncs).toHaveLength(2);
    expect(syncs[1]!.hold.concurrent).toBeGreaterThan(1);
    expect(agent.tryReserve({ concurrent: 1 }, keeper).ok).toBe(true);
  });
});

describe("LimitAgent, a client that leaves while its request waits for a grant", () => {
  it("stops asking room for it at once: the handler may never run again to take its need back", async () => {
    let answer: (() => void) | null = null;
    const allowance = new Allowance();
    const syncs: LimitSync[] = [];
    const rpc: LimitsRpc = {
      sync: (request) => {
        syncs.push(request);
        return new Promise((resolve) => (answer = () => resolve(allowance.sync(request, Date.now()))));
      },
      snapshot: async () => allowance.snapshot(Date.now()),
    };
    const agent = new LimitAgent(() => "isolate-a", "key=alice", CONCURRENT, () => rpc);
    const keeper = { waitUntil: () => {} };
    const gone = new AbortController();
    const waiting = agent.reserveWaiting({ concurrent: 1 }, keeper, gone.signal);
    expect(syncs[0]!.hold.concurrent).toBe(1); // the sync asks room for the waiting request
    gone.abort();
    expect(agent.ledger.hold(Date.now()).concurrent ?? 0).toBe(0); // before the wait ends, not after
    answer!();
    await waiting;
    agent.dispose();
  });
});

describe("LimitAgent, a window that ends while a request waits for its grant", () => {
  it("asks again: the grant the request waited for is the old window's, which it cannot spend", async () => {
    const saved = clock.now;
    let now = Date.UTC(2027, 0, 1, 12, 0, 59, 900); // 100 ms before the minute ends
    clock.now = () => now;
    try {
      const allowance = new Allowance();
      const answers: (() => void)[] = [];
      const rpc: LimitsRpc = {
        // The object counts the sync at the time it left (its window), and answers when the test says.
        sync: (request) => {
          const at = now;
          return new Promise((resolve) => answers.push(() => resolve(allowance.sync(request, at))));
        },
        snapshot: async () => allowance.snapshot(now),
      };
      const agent = new LimitAgent(() => "isolate-a", "key=alice", { tokens: { total: 1_000, window: "minute" } }, () => rpc);
      const waiting = agent.reserveWaiting({ tokens: 10 }, { waitUntil: () => {} });
      expect(answers).toHaveLength(1);
      now += 200; // the minute ends while the sync is out
      answers[0]!();
      await expect.poll(() => answers.length).toBe(2);
      answers[1]!();
      expect((await waiting).ok).toBe(true);
      agent.dispose();
    } finally {
      clock.now = saved;
    }
  });
});
