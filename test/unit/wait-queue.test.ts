import { describe, expect, it } from "vitest";
import type { WaitingPriority } from "../../src/core/pool/wait-queue";
import { FairQueue } from "../../src/core/pool/wait-queue";
import { WaitRoom } from "../../src/app/state/wait-room";
import { PoolAgent } from "../../src/app/state/pool-agent";
import type { PoolRpc } from "../../src/app/state/stubs";
import type { PoolSpec, PoolSyncRequest, PoolView } from "../../src/core/pool/wire";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { DEFAULT_CIRCUIT_POLICY, newCircuit } from "../../src/core/health/circuit";

const NOW = 1_000_000;
const TTL = 2_000;

function fill(q: FairQueue<string>, entries: [tenant: string, priority: WaitingPriority, id: string][]) {
  for (const [tenant, priority, id] of entries) expect(q.push(tenant, priority, id, NOW + TTL)).not.toBeNull();
}

const drain = (q: FairQueue<string>) => {
  const out: string[] = [];
  for (let t = q.next(); t; t = q.next()) out.push(t.value);
  return out;
};

describe("FairQueue", () => {
  it("serves every standard waiter before any sheddable one, whatever the arrival order", () => {
    const q = new FairQueue<string>(10);
    fill(q, [["a", "sheddable", "s1"], ["b", "standard", "t1"], ["a", "sheddable", "s2"], ["c", "standard", "t2"]]);
    expect(drain(q)).toEqual(["t1", "t2", "s1", "s2"]);
  });

  it("takes turns across tenants: one with many waiting does not starve one with a single request", () => {
    const q = new FairQueue<string>(100);
    fill(q, [["A", "standard", "a1"], ["A", "standard", "a2"], ["A", "standard", "a3"], ["A", "standard", "a4"], ["B", "standard", "b1"], ["C", "standard", "c1"], ["C", "standard", "c2"]]);
    expect(drain(q)).toEqual(["a1", "b1", "c1", "a2", "c2", "a3", "a4"]);
  });

  it("a tenant that arrives late takes its turn after the tenants already in rotation, not after all their requests", () => {
    const q = new FairQueue<string>(100);
    fill(q, Array.from({ length: 5 }, (_, i): [string, WaitingPriority, string] => ["A", "standard", `a${i}`]));
    expect(q.next()!.value).toBe("a0");
    fill(q, [["B", "standard", "b0"]]);
    expect(q.next()!.value).toBe("a1"); // A's turn came up again before B joined the rotation's end
    expect(q.next()!.value).toBe("b0");
  });

  it("puts a ticket refused on its turn back at the head of its line with its tenant's turn, losing no place", () => {
    const q = new FairQueue<string>(10);
    fill(q, [["A", "standard", "a1"], ["A", "standard", "a2"], ["B", "standard", "b1"]]);
    const taken = q.next()!;
    expect(taken.value).toBe("a1");
    expect(q.size).toBe(2);
    q.putBack(taken);
    expect(q.size).toBe(3);
    expect(q.peek()!.value).toBe("a1");
    expect(drain(q)).toEqual(["a1", "b1", "a2"]);
  });

  it("is bounded: a push past maxWaiting returns null; a put-back ticket keeps its place even when full", () => {
    const q = new FairQueue<string>(2);
    fill(q, [["A", "standard", "a1"], ["B", "standard", "b1"]]);
    expect(q.push("C", "standard", "c1", NOW)).toBeNull();
    const taken = q.next()!;
    expect(q.push("C", "standard", "c1", NOW)).not.toBeNull(); // room again
    q.putBack(taken);
    expect(q.size).toBe(3);
    expect(q.push("D", "standard", "d1", NOW)).toBeNull();
    expect(new FairQueue<string>(0).push("A", "standard", "x", NOW)).toBeNull(); // 0 = off
  });

  it("expires tickets at their deadline by the clock it is given, and removes a ticket anywhere", () => {
    const q = new FairQueue<string>(10);
    q.push("A", "standard", "early", NOW + 100);
    const middle = q.push("B", "sheddable", "middle", NOW + 500)!;
    q.push("A", "standard", "late", NOW + 1_000);
    expect(q.expire(NOW + 99)).toEqual([]);
    expect(q.expire(NOW + 100).map((t) => t.value)).toEqual(["early"]);
    expect(q.remove(middle)).toBe(true);
    expect(q.remove(middle)).toBe(false);
    expect(q.size).toBe(1);
    expect(q.expire(NOW + 10_000).map((t) => t.value)).toEqual(["late"]);
    expect(q.size).toBe(0);
    expect(q.next()).toBeNull();
  });

  it("tells whether a class or a higher one has waiters", () => {
    const q = new FairQueue<string>(10);
    expect(q.hasAtOrAbove("sheddable")).toBe(false);
    fill(q, [["A", "sheddable", "s"]]);
    expect(q.hasAtOrAbove("standard")).toBe(false);
    expect(q.hasAtOrAbove("sheddable")).toBe(true);
    fill(q, [["A", "standard", "t"]]);
    expect(q.hasAtOrAbove("standard")).toBe(true);
  });
});

/** Whether `p` settles within `ms` (the room's waiters look every POLL ms). */
const POLL = 2;
const settled = async <T>(p: Promise<T>, ms = 50) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setTimeout(resolve, ms));
  return done;
};

describe("WaitRoom", () => {
  it("offers freed capacity to one waiter at a time, in fair order; admitted passes the offer on, refused stops it", async () => {
    const room = new WaitRoom(10, POLL);
    const a1 = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    const a2 = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    const b1 = room.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    const turns = [a1.turn(), a2.turn(), b1.turn()];
    expect(await settled(turns[0]!)).toBe(false);
    room.offer();
    room.offer(); // a second offer while a1 decides wakes nobody else (no herd)
    expect(await settled(turns[0]!)).toBe(true);
    expect(await settled(turns[1]!)).toBe(false);
    expect(await settled(turns[2]!)).toBe(false);
    a1.admitted(); // leased: the next in fair order (B, not A's second) gets a turn
    expect(await settled(turns[2]!)).toBe(true);
    expect(await settled(turns[1]!)).toBe(false);
    room.offer(); // capacity may have freed while b1 decides
    b1.refused(); // so b1, refused and back at the head, is offered once more
    expect(await b1.turn()).toBe("woken");
    b1.refused();
    const waiting = b1.turn();
    expect(await settled(waiting)).toBe(false);
    expect(room.size).toBe(2);
    for (const p of [a2, b1]) p.leave();
    expect(room.size).toBe(0);
  });

  it("a waiter whose client leaves is taken out at once; on its turn, the turn passes to the next", async () => {
    const room = new WaitRoom(10, POLL);
    const gone = new AbortController();
    const a = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: gone.signal })!;
    const b = room.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    const turnA = a.turn();
    const turnB = b.turn();
    gone.abort();
    expect(await turnA).toBe("gone");
    expect(room.size).toBe(1);
    a.leave();
    room.offer();
    expect(await turnB).toBe("woken");
    b.leave(); // leaving on its turn offers the capacity to whoever is next
    expect(room.size).toBe(0);
  });

  it("ends a wait at its TTL with 'expired', and mustWait holds new requests behind waiters of their class or higher", async () => {
    const room = new WaitRoom(10, POLL);
    const s = room.join({ tenant: "A", priority: "sheddable", ttlMs: 20, signal: undefined })!;
    expect(room.mustWait("sheddable")).toBe(true);
    expect(room.mustWait("standard")).toBe(false);
    expect(await s.turn()).toBe("expired");
    expect(s.expired()).toBe(true);
    s.leave();
    expect(room.mustWait("sheddable")).toBe(false);
  });
});

describe("a pool agent's wake-ups", () => {
  const spec: PoolSpec = {
    pool: "p",
    version: "v1",
    policy: "weighted",
    scoring: DEFAULT_SETTINGS,
    indexCapacityBlocks: 16,
    locality: [],
    maxOngoing: 1,
    queue: { maxWaiting: 4, ttlMs: 60_000 },
    failOpen: false,
    circuit: DEFAULT_CIRCUIT_POLICY,
    healthCheckS: 0,
    healthPath: "/health",
    metrics: { scrapeMs: 0, path: "/metrics", timeoutMs: 1000, staleMs: 5000, failureThreshold: 3 },
    replicas: [{ id: "a", url: "http://a", weight: 1, labels: {} }],
  };
  const rpc = {
    sync: async (request: PoolSyncRequest): Promise<PoolView> => ({
      version: "v1", at: 0, acked: Math.max(0, ...request.batches.map((b) => b.seq)), prefix: { cursor: 0, inserts: [] },
      replicas: [{ id: "a", circuit: newCircuit(), others: 0, healthy: null, metrics: null }],
    }),
  } as unknown as PoolRpc;

  it("offers the room a turn when this isolate releases a lease, and when a view arrives (others' releases)", async () => {
    const agent = new PoolAgent(() => "isolate-1", spec, () => rpc);
    agent.lease("a");
    const first = agent.waiting.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    const turn = first.turn();
    expect(await settled(turn)).toBe(false);
    agent.release("a");
    expect(await turn).toBe("woken");
    first.admitted();

    const second = agent.waiting.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    const next = second.turn();
    expect(await settled(next)).toBe(false);
    await agent.flush();
    expect(await next).toBe("woken");
    second.leave();
    agent.dispose();
  });
});

describe("WaitRoom bound", () => {
  it("counts the waiter on its turn: max_waiting 1 with one deciding refuses the next", () => {
    const room = new WaitRoom(1, POLL);
    const a = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined })!;
    room.offer(); // a is on its turn, out of the fair queue but still waiting
    expect(room.size).toBe(1);
    expect(room.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined })).toBeNull();
    a.leave();
    const b = room.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined });
    expect(b).not.toBeNull();
    b!.leave();
  });
});
