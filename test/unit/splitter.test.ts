/**
 * The graph executor's random choices (src/core/graph/executor.ts) with the I/O seam faked:
 * the Splitter's draw against cumulative weights and a mirror's percentage, at their
 * exact boundaries with scripted draws, then the Splitter's share over many crypto draws.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import type { CompiledGraph } from "../../src/core/graph/compile";
import { compileGraphs } from "../../src/core/graph/compile";
import type { GraphIO, ServiceCall } from "../../src/core/graph/executor";
import { runGraph } from "../../src/core/graph/executor";
import type { RandomSource } from "../../src/lib/random";
import { cryptoRandom } from "../../src/lib/random";
import { scripted } from "../support/scripted-random";
import { CHI2_CRITICAL_1E4, chiSquare, missRate } from "../support/statistics";

/** One compiled graph from its root node's YAML (indented as under `spec.nodes.root:`). */
function graphOf(root: string): CompiledGraph {
  const manifest = `apiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: g\nspec:\n  nodes:\n    root:\n${root}`;
  const loaded = loadConfig(manifest, {});
  if (!loaded.ok) throw new Error(`invalid graph: ${JSON.stringify(loaded.errors)}`);
  return compileGraphs(loaded.config).get("g")!;
}

const splitterOf = (weights: number[]) =>
  graphOf(`      routerType: Splitter\n      steps:\n${weights.map((w, i) => `      - { name: s${i}, serviceUrl: "http://s${i}.test/", weight: ${w} }\n`).join("")}`);

/** An I/O seam that answers every call at once and records which URLs were called and mirrored. */
const urlOf = (call: ServiceCall): string => (call.target.kind === "url" ? call.target.url : `pool:${call.target.pool}`);

function fakeIO(random: RandomSource) {
  const called: string[] = [];
  const mirrored: string[] = [];
  const io: GraphIO = {
    random,
    callService: async (call: ServiceCall) => {
      called.push(urlOf(call));
      return { ok: true, status: 200, body: new TextEncoder().encode("{}"), contentType: "application/json" };
    },
    mirror: (call) => void mirrored.push(urlOf(call)),
    route: () => Promise.reject(new Error("no Router nodes here")),
  };
  return { io, called, mirrored };
}

const signal = new AbortController().signal;
const input = new TextEncoder().encode("{}");

/** The step a Splitter sends one request to, for one scripted draw (uniformInt(100) = draw % 100 below the rejection limit). */
async function splitTo(graph: CompiledGraph, draws: number[]): Promise<string> {
  const random = scripted(draws);
  const { io, called } = fakeIO(random);
  const run = await runGraph(graph, input, io, signal);
  expect(run.result.ok).toBe(true);
  expect(random.used).toBe(draws.length); // one draw per request (more only when one is rejected)
  expect(called).toHaveLength(1);
  return called[0]!.slice("http://".length, "http://".length + 2);
}

describe("Splitter: the draw against cumulative weights", () => {
  it("sends draws 0..19 to a 20 weight and 20..99 to the 80 weight (KServe: point < cumulative weight)", async () => {
    const graph = splitterOf([20, 80]);
    expect(await splitTo(graph, [0])).toBe("s0");
    expect(await splitTo(graph, [19])).toBe("s0");
    expect(await splitTo(graph, [20])).toBe("s1"); // the boundary: 20 belongs to the second step
    expect(await splitTo(graph, [99])).toBe("s1");
  });

  it("places every boundary of a three-way split exactly", async () => {
    const graph = splitterOf([20, 30, 50]);
    const expected = new Map([[0, "s0"], [19, "s0"], [20, "s1"], [49, "s1"], [50, "s2"], [99, "s2"]]);
    for (const [draw, step] of expected) expect(await splitTo(graph, [draw]), `draw ${draw}`).toBe(step);
  });

  it("never sends to a weight-0 step, not even at its own boundary", async () => {
    const graph = splitterOf([0, 100, 0]);
    for (const draw of [0, 1, 50, 99]) expect(await splitTo(graph, [draw]), `draw ${draw}`).toBe("s1");
    const last = splitterOf([50, 50, 0]);
    expect(await splitTo(last, [99])).toBe("s1");
  });

  it("rejects draws in the partial block at the top of 2^32 (no modulo bias) and draws again", async () => {
    // 2^32 % 100 = 96: the 96 draws from 2^32 - 96 up are thrown away.
    // Folded, 2^32 - 96 would read as point 0 (the first step).
    expect(await splitTo(splitterOf([20, 80]), [2 ** 32 - 96, 99])).toBe("s1");
    expect(await splitTo(splitterOf([20, 80]), [2 ** 32 - 97])).toBe("s1"); // the largest accepted draw: point 99
  });
});

describe("mirror percentage", () => {
  const mirrorGraph = (percent: number) =>
    graphOf(`      routerType: Sequence\n      steps:\n      - { serviceUrl: "http://main.test/" }\n      - { serviceUrl: "http://shadow.test/", mirror: ${percent} }\n`);

  /** Whether a request is mirrored for one 53-bit float draw, made of two uint32s. */
  async function mirroredFor(percent: number, draws: [number, number]) {
    const random = scripted(draws);
    const { io, called, mirrored } = fakeIO(random);
    await runGraph(mirrorGraph(percent), input, io, signal);
    expect(random.used).toBe(2);
    expect(called).toEqual(["http://main.test/"]);
    return mirrored.length === 1;
  }
  const HALF: [number, number] = [2 ** 31, 0]; // exactly 0.5
  const JUST_BELOW_HALF: [number, number] = [2 ** 31 - 1, 2 ** 32 - 1]; // 0.5 - 2^-53

  it("copies a request when draw × 100 < percent, and not at the boundary", async () => {
    expect(await mirroredFor(50, JUST_BELOW_HALF)).toBe(true);
    expect(await mirroredFor(50, HALF)).toBe(false);
    expect(await mirroredFor(100, [2 ** 32 - 1, 2 ** 32 - 1])).toBe(true); // the largest draw, 1 - 2^-53
    expect(await mirroredFor(0, [0, 0])).toBe(false); // the smallest draw, 0
  });
});

// Statistical: 20,000 crypto draws through the executor, failing when Pearson's
// chi-square passes the p = 1e-4 critical value (false failure 1e-4). A Splitter
// 5 points off (25/75 or 15/85 under a 20/80 test) passes with probability < 1e-50.
// The HTTP test of the same split (graphs-kserve.test.ts) checks the wiring only.
describe("Splitter share", () => {
  const DRAWS = 20_000;
  async function shares(weights: number[]): Promise<number[]> {
    const graph = splitterOf(weights);
    const { io, called } = fakeIO(cryptoRandom());
    for (let i = 0; i < DRAWS; i++) await runGraph(graph, input, io, signal);
    return weights.map((_, i) => called.filter((url) => url === `http://s${i}.test/`).length);
  }

  it("sends each step its weight's share within a chi-square bound (20/80)", async () => {
    const counts = await shares([20, 80]);
    expect(chiSquare(counts, [0.2, 0.8], DRAWS), `${counts}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("a Splitter 5 points off fails that test: computed and run", async () => {
    for (const [p, off] of [[25, 75], [15, 85]]) {
      expect(missRate(DRAWS, 0.2, p! / 100, CHI2_CRITICAL_1E4[1])).toBeLessThan(1e-20);
      const counts = await shares([p!, off!]);
      expect(chiSquare(counts, [0.2, 0.8], DRAWS), `${counts}`).toBeGreaterThan(CHI2_CRITICAL_1E4[1]);
    }
  });
});
