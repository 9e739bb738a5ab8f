/** The concurrency slots object: grants never add up past the limit, and come back by themselves. */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { slotsObjectName } from "../../src/app/state/object-names";
import { frozenClock } from "../support/state";

const stub = () => env.CONCURRENCY_SLOTS.getByName(slotsObjectName(`t-${crypto.randomUUID()}`));
let restore: (() => void) | null = null;
afterEach(() => {
  restore?.();
  restore = null;
});

describe("concurrency slots", () => {
  it("grants at most the limit across isolates, and a freed slot goes to the next asker", async () => {
    const slots = stub();
    const ask = (isolate: string, hold: number) => slots.acquire({ isolate, limit: 3, hold, ttlMs: 10_000 });
    expect(await ask("a", 2)).toEqual({ granted: 2, unclaimed: 1, acked: 0 });
    expect(await ask("b", 2)).toEqual({ granted: 1, unclaimed: 0, acked: 0 });
    expect(await ask("c", 1)).toEqual({ granted: 0, unclaimed: 0, acked: 0 });
    // a gives one back on its sync; c's next ask gets it
    expect(await slots.sync({ isolate: "a", limit: 3, hold: 1, ttlMs: 10_000, batches: [] })).toEqual({ granted: 1, unclaimed: 1, acked: 0 });
    expect(await ask("c", 1)).toEqual({ granted: 1, unclaimed: 0, acked: 0 });
    expect(await slots.snapshot()).toEqual({ granted: 3, isolates: 3 });
  });

  it("frees a grant that is not renewed within its ttl (a vanished isolate)", async () => {
    const clock = frozenClock();
    restore = () => clock.restore();
    const slots = stub();
    await slots.acquire({ isolate: "gone", limit: 2, hold: 2, ttlMs: 5_000 });
    expect((await slots.acquire({ isolate: "b", limit: 2, hold: 1, ttlMs: 5_000 })).granted).toBe(0);
    clock.advance(5_001);
    expect((await slots.acquire({ isolate: "b", limit: 2, hold: 1, ttlMs: 5_000 })).granted).toBe(1);
  });

  it("a sync renews but never grows a grant, and a lowered limit shrinks grants", async () => {
    const slots = stub();
    await slots.acquire({ isolate: "a", limit: 4, hold: 2, ttlMs: 10_000 });
    expect((await slots.sync({ isolate: "a", limit: 4, hold: 4, ttlMs: 10_000, batches: [] })).granted).toBe(2);
    await slots.acquire({ isolate: "b", limit: 4, hold: 2, ttlMs: 10_000 });
    expect((await slots.sync({ isolate: "a", limit: 3, hold: 2, ttlMs: 10_000, batches: [] })).granted).toBe(1);
  });

  it("sets the same grant when a sync whose answer was lost is sent again (hold is absolute: nothing to dedupe)", async () => {
    const slots = stub();
    await slots.acquire({ isolate: "a", limit: 4, hold: 3, ttlMs: 10_000 });
    const request = { isolate: "a", limit: 4, hold: 2, ttlMs: 10_000, batches: [] };
    await slots.sync(request); // its answer is lost
    expect(await slots.sync(request)).toEqual({ granted: 2, unclaimed: 2, acked: 0 });
    expect(await slots.acquire({ isolate: "a", limit: 4, hold: 3, ttlMs: 10_000 })).toEqual({ granted: 3, unclaimed: 1, acked: 0 });
    await slots.acquire({ isolate: "a", limit: 4, hold: 3, ttlMs: 10_000 }); // resent: still 3, not 4
    expect(await slots.snapshot()).toEqual({ granted: 3, isolates: 1 });
  });
});
