/** The isolate's record of prompts being prefilled per replica (src/app/state/prefill-gate.ts). */
import { describe, expect, it } from "vitest";
import { PrefillGate, waitForPrefill } from "../../src/app/state/prefill-gate";

const settledWithin = async (p: Promise<void>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

describe("PrefillGate", () => {
  it("tells a request to wait only where another is prefilling the same opening, until that one lets go (once, however often)", async () => {
    const gate = new PrefillGate();
    expect(gate.warming("r0", 42)).toBeNull();
    const release = gate.warm("r0", 42);
    const ready = gate.warming("r0", 42)!;
    expect(ready).not.toBeNull();
    expect(gate.warming("r1", 42)).toBeNull(); // another replica
    expect(gate.warming("r0", 43)).toBeNull(); // another opening
    expect(await settledWithin(ready, 20)).toBe(false);
    release();
    release();
    expect(await settledWithin(ready, 20)).toBe(true);
    expect(gate.warming("r0", 42)).toBeNull();
    expect(gate.size).toBe(0);
  });

  it("a late release of an older warm-up leaves a newer one in place", () => {
    const gate = new PrefillGate();
    const first = gate.warm("r0", 1);
    const second = gate.warm("r0", 1);
    first();
    expect(gate.warming("r0", 1)).not.toBeNull();
    second();
    expect(gate.size).toBe(0);
  });
});

describe("waitForPrefill", () => {
  it("ends when the prefill is done, at the bound, or when the client leaves, whichever is first", async () => {
    let open!: () => void;
    const ready = new Promise<void>((r) => (open = r));
    const started = Date.now();
    await waitForPrefill(new Promise<void>(() => {}), 30, undefined);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const client = new AbortController();
    const waiting = waitForPrefill(new Promise<void>(() => {}), 10_000, client.signal);
    client.abort();
    expect(await settledWithin(waiting, 50)).toBe(true);
    const done = waitForPrefill(ready, 10_000, undefined);
    open();
    expect(await settledWithin(done, 50)).toBe(true);
  });
});
