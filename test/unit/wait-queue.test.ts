import { describe, expect, it } from "vitest";
import type { WaitingPriority } from "../../src/core/pool/wait-queue";
import { FairQueue } from "../../src/core/pool/wait-queue";
import type { Probe } from "../../src/app/state/wait-room";
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

  it("serves critical waiters (held by the hard cap) before every other class", () => {
    const q = new FairQueue<string>(10);
    fill(q, [["a", "standard", "t1"], ["b", "critical", "c1"], ["a", "sheddable", "s1"], ["c", "critical", "c2"]]);
    expect(drain(q)).toEqual(["c1", "c2", "t1", "s1"]);
  });

  it("caps one tenant's tickets across classes; others still get a place", () => {
    const q = new FairQueue<string>(10, 2);
    fill(q, [["A", "standard", "a1"], ["A", "sheddable", "a2"]]);
    expect(q.push("A", "critical", "a3", NOW + TTL)).toBeNull();
    expect(q.waitingOf("A")).toBe(2);
    expect(q.push("B", "standard", "b1", NOW + TTL)).not.toBeNull();
    expect(drain(q)).toEqual(["a1", "b1", "a2"]);
    expect(q.waitingOf("A")).toBe(0);
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
});

/** Whether `p` settles within `ms` (the room's waiters look every POLL ms). */
const POLL = 2;
const settled = async <T>(p: Promise<T>, ms = 50) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setTimeout(resolve, ms));
  return done;
};

/** A pool of `free` slots as a waiter's probe sees it: each admission takes one, its undo gives it back. */
function slots(free: number) {
  const pool = { free, probes: 0 };
  const probe = (): ReturnType<Probe> => {
    pool.probes++;
    if (pool.free <= 0) return { admitted: false, classFull: false };
    pool.free--;
    return { admitted: true, undo: () => void pool.free++ };
  };
  return { pool, probe };
}

const NO_TICK = 10_000; // a poll interval no test outlives: whatever a test sees happened without a poll tick

describe("WaitRoom", () => {
  it("admits as many waiters as there are free slots at the moment they free, in fair order, without a poll tick", async () => {
    const room = new WaitRoom(10, 10, NO_TICK);
    const { pool, probe } = slots(0);
    const a1 = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined, probe })!;
    const a2 = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined, probe })!;
    const b1 = room.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined, probe })!;
    expect(room.offer()).toBe(0); // no slot: nobody admitted, one probe (the head) tried
    pool.free = 2; // two leases released at once
    expect(room.offer()).toBe(2);
    expect(pool.free).toBe(0); // both slots taken for the waiters at once: no newcomer can take them meanwhile
    expect(room.size).toBe(1);
    expect(room.counts).toEqual({ joined: 3, admitted: 2, full: 0 });
    expect(await a1.turn()).toBe("admitted"); // A's first, then B (tenants take turns), not A's second
    expect(await b1.turn()).toBe("admitted");
    expect(await settled(a2.turn())).toBe(false);
    for (const p of [a1, b1]) p.done();
    a2.leave();
    expect(room.size).toBe(0);
  });

  it("a slot held for a waiter goes back and on to the next one when its client leaves before picking it up", async () => {
    const room = new WaitRoom(10, 10, NO_TICK);
    const { pool, probe } = slots(0);
    const gone = new AbortController();
    const a = room.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: gone.signal, probe })!;
    const b = room.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined, probe })!;
    pool.free = 1;
    expect(room.offer()).toBe(1); // a holds the slot
    gone.abort(); // a's client leaves: its slot goes to b at once
    expect(pool.free).toBe(0);
    expect(room.counts.admitted).toBe(2);
    expect(await a.turn()).toBe("gone");
    expect(await b.turn()).toBe("admitted");
    b.unhold(); // its own pick takes the slot over
    expect(pool.free).toBe(1);
    b.done();
    expect(room.size).toBe(0);
  });

  it("a class refused only for its share lets the next class go; a full pool stops the round", async () => {
    const room = new WaitRoom(10, 10, NO_TICK);
    const { pool, probe } = slots(1);
    const critical = room.join({ tenant: "A", priority: "critical", ttlMs: 60_000, signal: undefined, probe: () => ({ admitted: false, classFull: true }) })!;
    const shed = room.join({ tenant: "B", priority: "sheddable", ttlMs: 60_000, signal: undefined, probe })!;
    const std = room.join({ tenant: "C", priority: "standard", ttlMs: 60_000, signal: undefined, probe })!;
    expect(room.offer()).toBe(1);
    expect(await std.turn()).toBe("admitted"); // standard before sheddable; the critical one keeps its place
    expect(await settled(shed.turn())).toBe(false);
    expect(room.size).toBe(2);
    expect(pool.free).toBe(0);
    for (const p of [critical, shed, std]) p.leave();
  });

  it("ends a wait at its TTL with 'expired', and never spends a slot on a waiter past it", async () => {
    let now = 1_000;
    const room = new WaitRoom(10, 10, 5, () => now);
    const { pool, probe } = slots(0);
    const s = room.join({ tenant: "A", priority: "sheddable", ttlMs: 20, signal: undefined, probe })!;
    now += 20;
    pool.free = 1;
    expect(room.offer()).toBe(0);
    expect(pool.free).toBe(1);
    expect(await s.turn()).toBe("expired");
    expect(s.expired()).toBe(true);
    s.leave();
    expect(room.size).toBe(0);
  });

  it("caps each tenant's share: a flooding tenant is refused a place while another still queues", () => {
    const room = new WaitRoom(8, 2, NO_TICK);
    const { probe } = slots(0);
    const join = (tenant: string) => room.join({ tenant, priority: "standard", ttlMs: 60_000, signal: undefined, probe });
    const places = [join("A"), join("A")];
    expect(join("A")).toBeNull();
    expect(join("A")).toBeNull();
    const b = join("B");
    expect(b).not.toBeNull();
    expect(room.counts).toEqual({ joined: 3, admitted: 0, full: 2 });
    for (const p of [...places, b]) p!.leave();
    expect(join("A")).not.toBeNull(); // a place freed is the tenant's again
  });
});

describe("a pool agent's admissions", () => {
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
  let othersOnA = 0;
  const rpc = {
    sync: async (request: PoolSyncRequest): Promise<PoolView> => ({
      version: "v1", at: 0, acked: Math.max(0, ...request.batches.map((b) => b.seq)), prefix: { cursor: 0, inserts: [] },
      replicas: [{ id: "a", circuit: newCircuit(), others: othersOnA, healthy: null, metrics: null }],
    }),
  } as unknown as PoolRpc;
  /** What a waiter's probe does (pool-session's probeNow): lease the replica when it is under the cap. */
  const leaseProbe = (agent: PoolAgent) => (): ReturnType<Probe> => {
    if (agent.load("a") >= 1) return { admitted: false, classFull: false };
    agent.lease("a");
    return { admitted: true, undo: () => agent.unlease("a") };
  };

  it("a released lease admits the next waiter at once, holding the slot for it; a view showing others' releases does too", async () => {
    const agent = new PoolAgent(() => "isolate-1", spec, () => rpc);
    agent.lease("a");
    const first = agent.waiting.join({ tenant: "A", priority: "standard", ttlMs: 60_000, signal: undefined, probe: leaseProbe(agent) })!;
    agent.release("a");
    expect(agent.waiting.counts.admitted).toBe(1); // in the release itself, not on a later poll
    expect(agent.load("a")).toBe(1); // the slot is the waiter's: a newcomer sees the replica at its cap
    expect(await first.turn()).toBe("admitted");
    first.done();

    othersOnA = 1; // another isolate holds the slot
    await agent.flush();
    const second = agent.waiting.join({ tenant: "B", priority: "standard", ttlMs: 60_000, signal: undefined, probe: leaseProbe(agent) })!;
    agent.release("a"); // this isolate's slot frees, the other isolate's does not: nobody admitted
    expect(agent.waiting.counts.admitted).toBe(1);
    othersOnA = 0;
    await agent.flush(); // the other isolate's release shows in the view
    expect(agent.waiting.counts.admitted).toBe(2);
    expect(await second.turn()).toBe("admitted");
    second.done();
    agent.dispose();
  });
});
