import { describe, expect, it } from "vitest";
import { isImbalanced } from "../../src/core/picking/guards/balance";
import { HOT_PREFIX_REQUESTS, underBusyCap } from "../../src/core/picking/pickers/busy-cap";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { replica } from "../support/candidates";

describe("balance guard", () => {
  const { balanceAbs, balanceRel } = DEFAULT_SETTINGS.sglang;

  it("fires only when max − min is strictly past the absolute threshold (Ray's rule: rel 1)", () => {
    expect(isImbalanced([0, 10], 10, 1)).toBe(false);
    expect(isImbalanced([0, 11], 10, 1)).toBe(true);
    expect(isImbalanced([5, 3, 13], 10, 1)).toBe(false); // min 3, max 13: 10 apart
    expect(isImbalanced([5, 3, 14], 10, 1)).toBe(true); // 11 apart
  });

  it("also needs max strictly past rel × min (SGLang: 64 and 1.5)", () => {
    expect([balanceAbs, balanceRel]).toEqual([64, 1.5]);
    // 195 − 130 = 65 > 64 but 195 = 1.5 × 130: not past it.
    expect(isImbalanced([130, 195], balanceAbs, balanceRel)).toBe(false);
    expect(isImbalanced([130, 196], balanceAbs, balanceRel)).toBe(true);
    // 64 apart is not past 64, however relative.
    expect(isImbalanced([0, 64], balanceAbs, balanceRel)).toBe(false);
    expect(isImbalanced([0, 65], balanceAbs, balanceRel)).toBe(true);
  });

  it("takes min and max over the whole fleet, in any order", () => {
    expect(isImbalanced([40, 0, 20, 65, 30], balanceAbs, balanceRel)).toBe(true);
    expect(isImbalanced([65, 30, 20, 40, 1], balanceAbs, balanceRel)).toBe(false);
  });

  it("calls an empty or single-replica fleet balanced", () => {
    expect(isImbalanced([], 0, 1)).toBe(false);
    expect(isImbalanced([1_000], 0, 1)).toBe(false);
  });
});

describe("busy cap", () => {
  const cap = { loadFactor: 1.25, floor: 1 };
  const fleet = (...inflight: number[]) => inflight.map((n, i) => replica(`r${i}`, { inflight: n }));

  it("gives room up to loadFactor × the fair share of the pool's in-flight plus this request, this request included", () => {
    // Σ = 15, four replicas: fair = 16 / 4 = 4, cap = 5: a replica at 4 may take a fifth, one at 5 may not.
    expect(underBusyCap(fleet(4, 4, 4, 3), cap)).toEqual([true, true, true, true]);
    expect(underBusyCap(fleet(5, 4, 3, 3), cap)).toEqual([false, true, true, true]);
  });

  it("gives room at or below the floor whatever the fair share", () => {
    // Σ = 1: fair = 2 / 4 = 0.5, 1.25 × 0.5 < 1, the floor (1, so 2 with this request) holds it; at 2 it breaks.
    expect(underBusyCap(fleet(1, 0, 0, 0), cap)).toEqual([true, true, true, true]);
    expect(underBusyCap(fleet(2, 0, 0, 0), cap)).toEqual([false, true, true, true]);
  });

  it("shares the pool by weight: a weight-3 replica may carry three times as much", () => {
    // Σ = 11, Σ weight = 4: fair(big) = 12 · 3 / 4 = 9, cap 11.25 ≥ 10 + 1; fair(small) = 3, cap 3.75 ≥ 1 + 1.
    const mixed = [replica("big", { weight: 3, inflight: 10 }), replica("small", { inflight: 1 })];
    expect(underBusyCap(mixed, cap)).toEqual([true, true]);
    // Σ = 13: fair(small) = 14 / 4 = 3.5, cap 4.375 < 6; fair(big) = 10.5, cap 13.125 ≥ 9.
    const over = [replica("big", { weight: 3, inflight: 8 }), replica("small", { inflight: 5 })];
    expect(underBusyCap(over, cap)).toEqual([true, false]);
  });

  it("keeps a replica running HOT_PREFIX_REQUESTS of this prompt within its fair share while another is underused", () => {
    const loose = { loadFactor: 3, floor: 1 };
    // Σ = 9: fair 2.5, cap 7.5. r0 runs HOT_PREFIX_REQUESTS of this prompt; r3 is idle.
    const loads = [3, 3, 3, 0];
    expect(underBusyCap(fleet(...loads), loose, loads, [HOT_PREFIX_REQUESTS, 0, 0, 0])).toEqual([false, true, true, true]);
    // Fewer of this prompt there: a busy replica, not a hot prompt; the cap alone decides.
    expect(underBusyCap(fleet(...loads), loose, loads, [HOT_PREFIX_REQUESTS - 1, 0, 0, 0])).toEqual([true, true, true, true]);
    // One request on the fourth (Σ 10, fair 2.75): still at most half its share, still underused.
    const stray = [3, 3, 3, 1];
    expect(underBusyCap(fleet(...stray), loose, stray, [HOT_PREFIX_REQUESTS, 0, 0, 0])).toEqual([false, true, true, true]);
    // Nobody underused (Σ 11, fair 3, half 1.5 < 2): the cap alone decides.
    const busy = [3, 3, 3, 2];
    expect(underBusyCap(fleet(...busy), loose, busy, [HOT_PREFIX_REQUESTS, 0, 0, 0])).toEqual([true, true, true, true]);
  });

  it("is empty for an empty fleet", () => {
    expect(underBusyCap([], cap)).toEqual([]);
  });
});
