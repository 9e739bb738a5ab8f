/**
 * A limited request's gate (src/app/model-call/limits.ts) and the client leaving: from the
 * abort until an answer is delivered, the gate settles itself as failed, whatever the
 * handler is awaiting (a client that leaves may cancel that await for good); once an
 * answer is delivered, the engine settles it with what passed, and the abort does nothing.
 */
import { describe, expect, it } from "vitest";
import { LimitGate, type LimitContext } from "../../src/app/model-call/limits";
import { LimitAgent, type LimitsRpc } from "../../src/app/state/limits/limit-agent";
import { Allowance } from "../../src/core/limits/allowance";
import { clock } from "../../src/lib/clock";

async function admittedGate() {
  const allowance = new Allowance();
  const rpc: LimitsRpc = { sync: async (request) => allowance.sync(request, Date.now()), snapshot: async () => allowance.snapshot(Date.now()) };
  const keeper = { waitUntil: () => {} };
  const agent = new LimitAgent(() => "isolate-a", "key=alice", { concurrent: { total: 1, window: "none" }, requests: { total: 100, window: "minute" } }, () => rpc);
  const taken = await agent.reserveWaiting({ concurrent: 1, requests: 1 }, keeper);
  if (!taken.ok) throw new Error("the first request should fit");
  const cx = { ctx: keeper } as unknown as LimitContext; // a failed settle reads neither prices nor state
  const gate = new LimitGate(cx, "m", { promptTokens: 2, outputTokens: 5 }, [{ agent, reservation: taken.reservation }], [agent]);
  const inFlight = () => agent.ledger.reservedOf("concurrent", clock.now());
  const reported = () => agent.ledger.drain()?.usage.filter((u) => u.dim === "requests").reduce((sum, u) => sum + u.amount, 0) ?? 0;
  return { gate, inFlight, reported };
}

describe("LimitGate.watch", () => {
  it("settles as failed at the abort, before any answer: the slot is back and the request counted once, however often it is settled after", async () => {
    const { gate, inFlight, reported } = await admittedGate();
    const client = new AbortController();
    gate.watch(client.signal);
    expect(inFlight()).toBe(1);
    client.abort();
    expect(inFlight()).toBe(0);
    gate.observer.settled!({ delivered: false } as never); // the engine, if it ever runs
    gate.settle("failed");
    expect(inFlight()).toBe(0);
    expect(reported()).toBe(1);
  });

  it("leaves a delivered answer to the engine: the abort then settles nothing", async () => {
    const { gate, inFlight, reported } = await admittedGate();
    const client = new AbortController();
    gate.watch(client.signal);
    gate.observer.delivered!({} as never, false);
    client.abort();
    expect(inFlight()).toBe(1);
    expect(reported()).toBe(0);
  });

  it("settles at once when the client had already left", async () => {
    const { gate, inFlight } = await admittedGate();
    gate.watch(AbortSignal.abort());
    expect(inFlight()).toBe(0);
  });
});
