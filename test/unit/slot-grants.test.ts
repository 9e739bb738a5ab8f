/** The slot grant machine, pure: grants never add up past the limit, and expire unless renewed. */
import { describe, expect, it } from "vitest";
import { SlotGrants } from "../../src/core/routewise/slot-grants";

const ask = (isolate: string, limit: number, hold: number, ttlMs = 10_000) => ({ isolate, limit, hold, ttlMs });

describe("SlotGrants", () => {
  it("never grants more than the limit across isolates, however they ask", () => {
    const grants = new SlotGrants();
    let now = 0;
    // A deterministic storm of asks, syncs and lowered limits from five isolates.
    for (let i = 0; i < 500; i++) {
      const isolate = `i${i % 5}`;
      const limit = 3 + ((i * 7) % 4); // 3..6, varying as a config rollout would
      const hold = (i * 13) % 8;
      const grant = i % 3 === 0 ? grants.sync(ask(isolate, limit, hold), now) : grants.acquire(ask(isolate, limit, hold), now);
      const { granted } = grants.snapshot(now);
      expect(grant.granted).toBeGreaterThanOrEqual(0);
      expect(grant.granted + grant.unclaimed).toBeLessThanOrEqual(limit);
      // A grant made under a limit leaves every grant together within it (a lowered limit may find more held, and grants nothing).
      if (grant.granted > 0) expect(granted).toBeLessThanOrEqual(limit);
      expect(granted).toBeLessThanOrEqual(6);
      now += 100;
    }
  });

  it("grants up to the room left, and a lowered limit leaves no room until grants shrink", () => {
    const grants = new SlotGrants();
    expect(grants.acquire(ask("a", 3, 2), 0)).toEqual({ granted: 2, unclaimed: 1, acked: 0 });
    expect(grants.acquire(ask("b", 3, 5), 0)).toEqual({ granted: 1, unclaimed: 0, acked: 0 });
    expect(grants.acquire(ask("c", 3, 1), 0)).toEqual({ granted: 0, unclaimed: 0, acked: 0 });
    // The limit drops to 2: b's sync finds a's 2 taking all of it and gives its slot back.
    expect(grants.sync(ask("b", 2, 1), 0)).toEqual({ granted: 0, unclaimed: 0, acked: 0 });
    expect(grants.snapshot(0)).toEqual({ granted: 2, isolates: 1 });
  });

  it("an acquire never shrinks a grant; a sync never grows one", () => {
    const grants = new SlotGrants();
    grants.acquire(ask("a", 4, 3), 0);
    expect(grants.acquire(ask("a", 4, 1), 0).granted).toBe(3);
    expect(grants.sync(ask("a", 4, 4), 0).granted).toBe(3);
    expect(grants.sync(ask("a", 4, 1), 0).granted).toBe(1);
  });

  it("frees a grant not renewed within its ttl, and a renewal restarts the ttl", () => {
    const grants = new SlotGrants();
    grants.acquire(ask("a", 2, 2, 5_000), 0);
    grants.sync(ask("a", 2, 2, 5_000), 4_000); // renewed: now good until 9 s
    expect(grants.acquire(ask("b", 2, 1), 8_999).granted).toBe(0);
    expect(grants.acquire(ask("b", 2, 1), 9_000).granted).toBe(1); // expires at exactly 9 s
    expect(grants.snapshot(9_000)).toEqual({ granted: 1, isolates: 1 });
  });
});
