/** The load bench's report helpers (bench/report.ts) that compare rows round by round. */
import { describe, expect, it } from "vitest";
import { roundSpread, type Run } from "../../bench/report";

const run = (round: number, target: string, rps: number): Run => ({ round, target, cpuMs: Number.NaN, result: { rps } as Run["result"] });

describe("roundSpread", () => {
  it("gives the lowest and highest per-round ratio of two rows, over the rounds both ran", () => {
    const runs = [run(1, "a", 80), run(1, "b", 100), run(2, "b", 200), run(2, "a", 120), run(3, "a", 50)];
    expect(roundSpread(runs, "a", "b")).toBe(" (rounds 0.60x-0.80x)");
  });

  it("adds the median per-round ratio from three rounds on (the middle one, or the mean of the middle two)", () => {
    const three = [run(1, "a", 80), run(1, "b", 100), run(2, "a", 50), run(2, "b", 200), run(3, "a", 90), run(3, "b", 100)];
    expect(roundSpread(three, "a", "b")).toBe(" (rounds 0.25x-0.90x, median 0.80x)");
    const four = [...three, run(4, "a", 70), run(4, "b", 100)];
    expect(roundSpread(four, "a", "b")).toBe(" (rounds 0.25x-0.90x, median 0.75x)");
  });

  it("says nothing with fewer than two rounds to compare", () => {
    expect(roundSpread([run(1, "a", 80), run(1, "b", 100)], "a", "b")).toBe("");
    expect(roundSpread([run(1, "a", 80), run(2, "b", 100)], "a", "b")).toBe("");
  });
});
