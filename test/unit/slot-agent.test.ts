/**
 * One isolate's slot agent against the real grant machine behind an RPC that, like a
 * Durable Object, handles calls in the order they arrive and answers a little later:
 * concurrent callers each get a slot when that many are free, and never more are held
 * than the limit.
 */
import { describe, expect, it } from "vitest";
import type { SlotsRpc } from "../../src/app/state/routewise/stubs";
import { SlotAgent } from "../../src/app/state/routewise/slot-agent";
import { SlotGrants } from "../../src/core/routewise/slot-grants";

const RPC_MS = 5; // the object's answer comes back after this long; each call is handled when it arrives
const keeper = { waitUntil: (p: Promise<unknown>) => void p.catch(() => {}) };

/** The grant machine as an object would run it: a call is handled on arrival, its answer arrives RPC_MS later. */
function objectRpc(grants: SlotGrants, clock: () => number): SlotsRpc {
  const later = <T>(value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), RPC_MS));
  return {
    acquire: (request) => later(grants.acquire(request, clock())),
    sync: (request) => later(grants.sync(request, clock())),
    snapshot: () => later(grants.snapshot(clock())),
  };
}

function agentOf(grants: SlotGrants, isolate: string, limit: number): SlotAgent {
  const agent = new SlotAgent(() => isolate, "sub", limit, () => objectRpc(grants, Date.now));
  return agent;
}

/** What a request does for a slot: one held here if free, else one more from the object. */
async function take(agent: SlotAgent): Promise<boolean> {
  return agent.tryTake() || (await agent.acquire(keeper));
}

describe("SlotAgent: concurrent requests for slots", () => {
  it("four concurrent first requests on a limit of 4 all get a slot, and no more than 4 are granted", async () => {
    const grants = new SlotGrants();
    const agent = agentOf(grants, "a", 4);
    const taken = await Promise.all(Array.from({ length: 4 }, () => take(agent)));
    expect(taken).toEqual([true, true, true, true]);
    expect(agent.inUse).toBe(4);
    expect(grants.snapshot(Date.now()).granted).toBe(4);
  });

  it("with more concurrent requests than slots, exactly the free ones are taken and the rest are refused", async () => {
    const grants = new SlotGrants();
    grants.acquire({ isolate: "other", limit: 4, hold: 1, ttlMs: 60_000 }, Date.now()); // another isolate holds one
    const agent = agentOf(grants, "a", 4);
    const taken = await Promise.all(Array.from({ length: 6 }, () => take(agent)));
    expect(taken.filter(Boolean).length).toBe(3);
    expect(agent.inUse).toBe(3);
    expect(grants.snapshot(Date.now()).granted).toBe(4);
  });

  it("a second wave while slots are held asks for the held ones plus one per waiting request", async () => {
    const grants = new SlotGrants();
    const agent = agentOf(grants, "a", 5);
    expect(await take(agent)).toBe(true);
    const taken = await Promise.all(Array.from({ length: 4 }, () => take(agent)));
    expect(taken).toEqual([true, true, true, true]);
    expect(agent.inUse).toBe(5);
    expect(grants.snapshot(Date.now()).granted).toBe(5);
  });

  it("a sync sent while acquires are pending does not give back the slots they asked for", async () => {
    const grants = new SlotGrants();
    const agent = agentOf(grants, "a", 4);
    const waves = Array.from({ length: 3 }, () => take(agent));
    await agent.flush(); // a sync arrives at the object after the acquires and before their answers
    expect(await Promise.all(waves)).toEqual([true, true, true]);
    expect(agent.inUse).toBe(3);
    expect(grants.snapshot(Date.now()).granted).toBeGreaterThanOrEqual(3);
    expect(grants.snapshot(Date.now()).granted).toBeLessThanOrEqual(4);
  });
});
