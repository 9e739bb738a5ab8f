/**
 * Which policies route on engine metrics (src/core/picking/reads-metrics.ts) decides which
 * pools are scraped without a `metrics:` key. Checked against what each policy does: one
 * that is said not to read them picks the same order with or without them; one that is
 * said to read them picks differently when a replica's queue and KV say it is full.
 */
import { describe, expect, it } from "vitest";
import { POLICY_NAMES, runPolicy } from "../../src/core/picking/policies";
import { PrefixIndex } from "../../src/core/picking/prefix/prefix-index";
import { readsEngineMetrics } from "../../src/core/picking/reads-metrics";
import type { Candidate, PickInput } from "../../src/core/picking/scoring/types";
import { uniformFloat, uniformInt } from "../../src/lib/random";
import { features, hashes, pickInput, replica } from "../support/candidates";
import { seeded } from "../support/seeded-random";

const withoutMetrics = (c: Candidate): Candidate => ({ ...c, metrics: null });

/** A fleet of 2–5 replicas with load, metrics (busy or idle) and cached prefixes, and a request that shares some of them. */
function fleetInput(seed: number): PickInput {
  const random = seeded(seed);
  const size = 2 + uniformInt(random, 4);
  const candidates = Array.from({ length: size }, (_, k) =>
    replica(`r${k}`, { inflight: uniformInt(random, 6), metrics: { waiting: uniformInt(random, 10), kvUsage: uniformFloat(random), running: uniformInt(random, 4) } }),
  );
  const index = new PrefixIndex(256);
  for (const c of candidates) if (uniformInt(random, 2) === 0) index.add(c.id, hashes(1 + uniformInt(random, 12)));
  return pickInput({ candidates, index, request: features({ hashes: hashes(uniformInt(random, 10)) }), random });
}

describe("readsEngineMetrics", () => {
  it("names gaie and switchyard, the policies with metric scorers, filters or guards", () => {
    expect(POLICY_NAMES.filter(readsEngineMetrics)).toEqual(["gaie", "switchyard"]);
  });

  it.each(POLICY_NAMES.filter((name) => !readsEngineMetrics(name)))("%s picks the same order with or without metrics (300 seeded fleets)", (name) => {
    for (let seed = 1; seed <= 300; seed++) {
      const input = fleetInput(seed);
      const withMetrics = runPolicy(name, { ...input, random: seeded(seed * 7) }).order;
      const without = runPolicy(name, { ...input, candidates: input.candidates.map(withoutMetrics), random: seeded(seed * 7) }).order;
      expect(without, `seed ${seed}`).toEqual(withMetrics);
    }
  });

  it.each(POLICY_NAMES.filter(readsEngineMetrics))("%s avoids a replica whose metrics say it is full, and only then", (name) => {
    const candidates = [replica("full", { metrics: { waiting: 10, kvUsage: 0.95 } }), replica("idle")];
    const firsts = (list: Candidate[]) => Array.from({ length: 50 }, (_, seed) => runPolicy(name, pickInput({ candidates: list, random: seeded(seed + 1) })).order[0]);
    expect(new Set(firsts(candidates))).toEqual(new Set(["idle"]));
    expect(firsts(candidates.map(withoutMetrics))).toContain("full"); // a tie without them: 50 draws all "idle" has chance 2^-50
  });
});
