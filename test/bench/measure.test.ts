/** What the quality bench computes from its samples (bench/quality/measure.ts). */
import { describe, expect, it } from "vitest";
import { percentile } from "../../bench/load";
import { balanceOf, slowest, summarise } from "../../bench/quality/measure";

describe("percentile (nearest rank)", () => {
  const upTo = (n: number) => Float64Array.from({ length: n }, (_, i) => i + 1);
  it("is the value at rank ceil(p/100 × n)", () => {
    expect(percentile(upTo(100), 50)).toBe(50);
    expect(percentile(upTo(100), 99)).toBe(99);
    expect(percentile(upTo(200), 99)).toBe(198);
    expect(percentile(upTo(10), 99)).toBe(10);
    expect(percentile(upTo(10), 50)).toBe(5);
    expect(percentile(upTo(1), 99)).toBe(1);
    expect(percentile(upTo(0), 50)).toBeNaN();
  });
});

describe("balanceOf", () => {
  it("averages max ÷ mean over samples with something in flight, and keeps the peak", () => {
    expect(balanceOf([[2, 2], [4, 0], [0, 0]])).toEqual({ maxOverMean: 1.5, peak: 4, samples: 2 });
    expect(balanceOf([[3, 0, 0, 0]]).maxOverMean).toBe(4); // all on one of four replicas
    expect(balanceOf([]).maxOverMean).toBeNaN();
  });
});

describe("summarise", () => {
  it("takes hit rate from usage token sums (not a mean of ratios), leaves errors out of TTFT and hit rate", () => {
    const ok = (ttftMs: number, promptTokens: number, cachedTokens: number, replica: string, firstOfClient = false) => ({ ok: true as const, ttftMs, totalMs: ttftMs + 10, promptTokens, cachedTokens, replica, sentAt: 0, firstOfClient });
    const r = summarise(
      { outcomes: [ok(10, 100, 90, "r0"), ok(30, 300, 0, "r1", true), ok(20, 100, 50, "r0"), { ok: false, error: "HTTP 502", firstOfClient: false }], elapsedMs: 1500 },
      [[1, 1]],
    );
    expect(r.hitRate).toBeCloseTo(140 / 500, 12);
    expect(r.ttftP50).toBe(20);
    expect(r.ttftP99).toBe(30);
    expect(r.ttftP99AfterFirstWave).toBe(20); // the first wave's 30 ms left out
    expect(r.rps).toBe(2);
    expect(r).toMatchObject({ requests: 4, ok: 3, errors: 1, errorKinds: { "HTTP 502": 1 }, perReplica: { r0: 2, r1: 1 } });
  });
});

describe("slowest", () => {
  it("lists the slowest successful requests by TTFT, each sent-at relative to the row's first request", () => {
    const ok = (ttftMs: number, sentAt: number, cachedTokens: number, replica: string) => ({ ok: true as const, ttftMs, totalMs: ttftMs + 10, promptTokens: 800, cachedTokens, replica, sentAt, firstOfClient: false });
    const driven = { outcomes: [ok(20, 1000, 768, "r0"), ok(510, 1002, 0, "r2"), { ok: false as const, error: "timeout", firstOfClient: false }, ok(300, 1450, 768, "r1")], elapsedMs: 900 };
    expect(slowest(driven, 2)).toEqual(["TTFT 510 ms, sent at +2 ms, cached 0/800, r2", "TTFT 300 ms, sent at +450 ms, cached 768/800, r1"]);
    expect(slowest(driven, 0)).toEqual([]);
    expect(slowest({ outcomes: [], elapsedMs: 0 }, 3)).toEqual([]);
  });
});
