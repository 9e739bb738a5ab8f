/** A graph's last runs in one isolate: newest first, at most RUNS_KEPT_PER_GRAPH per graph and GRAPHS_KEPT graphs. */
import { describe, expect, it } from "vitest";
import { GRAPHS_KEPT, RecentGraphRuns, RUNS_KEPT_PER_GRAPH } from "../../src/core/graph/recent-runs";

describe("recent graph runs", () => {
  it("keeps each graph's newest runs, newest first", () => {
    const runs = new RecentGraphRuns();
    for (let i = 0; i < RUNS_KEPT_PER_GRAPH + 3; i++) runs.record("g", { at: i, route: [`step${i}`], status: 200 });
    const kept = runs.recent("g");
    expect(kept).toHaveLength(RUNS_KEPT_PER_GRAPH);
    expect(kept[0]!.at).toBe(RUNS_KEPT_PER_GRAPH + 2);
    expect(kept.at(-1)!.at).toBe(3);
    expect(runs.recent("other")).toEqual([]);
  });

  it("forgets the least recently run graph past GRAPHS_KEPT", () => {
    const runs = new RecentGraphRuns();
    for (let i = 0; i <= GRAPHS_KEPT; i++) runs.record(`g${i}`, { at: i, route: [], status: 200 });
    // g0 went when the last of them came; g1 runs again, so the next newcomer pushes out g2, not g1.
    runs.record("g1", { at: 999, route: [], status: 200 });
    runs.record("extra", { at: 1000, route: [], status: 200 });
    expect(runs.recent("g0")).toEqual([]);
    expect(runs.recent("g1")).toHaveLength(2);
    expect(runs.recent("g2")).toEqual([]);
    expect(runs.recent("extra")).toHaveLength(1);
  });
});
