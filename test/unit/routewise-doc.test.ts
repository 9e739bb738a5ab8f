import { describe, expect, it } from "vitest";
import doc from "../../docs/routewise.md?raw";
import { RouterParamsSchema } from "../../src/core/config/routewise-schema";
import { decide, type Decision, type RouteVerdict } from "../../src/core/routewise/decide";
import type { Envelope, RouteInput } from "../../src/core/routewise/types";

// docs/routewise.md, "The decision, worked": the inputs below are the ones the doc states,
// and every number the doc shows is rendered here from decide()'s answer and must appear
// in the doc verbatim, so the doc cannot drift from the code.

function envelope(meanTtftMs: number, msPerOutputToken: number): Envelope {
  return {
    samples: 200,
    ttftMs: {},
    totalMs: {},
    outputTokens: {},
    meanTtftMs,
    meanTotalMs: meanTtftMs + 199 * msPerOutputToken,
    meanPromptTokens: 1_000,
    meanOutputTokens: 200,
    msPerOutputToken,
    cachedRatio: 0,
    recent: { samples: 0, ttftMs: {} },
  };
}

const routes: RouteInput[] = [
  { id: "cheap-slow", type: "on_demand", pricing: { input: 0.5e-6, output: 2.5e-6 }, envelope: envelope(1_200, 30), healthy: true },
  { id: "dear-fast", type: "on_demand", pricing: { input: 3e-6, output: 15e-6 }, envelope: envelope(300, 10), healthy: true },
  {
    id: "prepaid",
    type: "quota",
    pricing: undefined,
    envelope: envelope(800, 20),
    quota: { remaining: 2_160_000, limit: 10_000_000, unit: "tokens", resetInMs: 3_600_000, failSafe: null },
    healthy: true,
  },
];
const request = { promptTokens: 1_000, maxTokens: null };
const demand = { requestsPerS: 2 };
const at = (alpha: number): Decision => decide({ routes, params: RouterParamsSchema.parse({ budget_alpha: alpha }), request, demand });

const dollars = (x: number) => `$${x.toFixed(5)}`;
const share = (x: number) => x.toFixed(3);
const ms = (x: number) => Math.round(x).toLocaleString("en-US");

/** The per-route table of the doc's example (alpha 0.25). */
function routeTable(decision: Decision): string[] {
  return decision.routes.map((r) => `| ${r.id} | ${r.outputTokens} | ${dollars(r.expectedCost)} | ${ms(r.expectedLatencyMs)} | ${share(r.cap)} | ${share(r.fraction)} |`);
}

/** One line per alpha of the doc's sweep. */
function sweepRow(alpha: number): string {
  const d = at(alpha);
  const [cheap, dear, prepaid] = d.routes.map((r) => share(r.fraction));
  return `| ${alpha} | ${dollars(d.allocation.budget)} | ${cheap} | ${dear} | ${prepaid} | ${dollars(d.allocation.expectedCost)} | ${ms(d.allocation.expectedLatencyMs)} | ${d.allocation.budgetMet ? "yes" : "no"} |`;
}

const SWEEP = [0, 0.1, 0.25, 0.5, 0.75, 1];

describe("docs/routewise.md: the decision, worked", () => {
  const decision = at(0.25);

  it("keeps its title and section", () => {
    expect(doc.startsWith("# RouteWise\n")).toBe(true);
    expect(doc).toContain("\n## The decision, worked\n");
  });

  it("shows each route's cost, latency, cap and fraction as decide() computes them", () => {
    for (const line of routeTable(decision)) expect(doc, line).toContain(line);
  });

  it("shows the budget and the allocation's cost and latency", () => {
    const a = decision.allocation;
    expect(a).toMatchObject({ budgetMet: true, capacityShort: false });
    expect(doc).toContain(`B = ${dollars(a.cheapest)} + 0.25 × (${dollars(a.dearest)} − ${dollars(a.cheapest)}) = ${dollars(a.budget)}`);
    expect(doc).toContain(`expected cost ${dollars(a.expectedCost)}, expected latency ${ms(a.expectedLatencyMs)} ms`);
  });

  it("the optimality certificate the doc gives holds: the bound at λ* equals the split's latency", () => {
    // At λ* = 980,000 ms per $ (where dear-fast and cheap-slow cost the same latency +
    // λ·cost), the cheapest fill of the capped simplex minus λ*·B bounds every split
    // within budget from below; the split reaches it.
    const lambda = 980_000;
    const priced = decision.routes.map((r) => r.expectedLatencyMs + lambda * r.expectedCost);
    expect(priced[0]).toBeCloseTo(8_180, 6);
    expect(priced[1]).toBeCloseTo(8_180, 6);
    expect(priced[2]).toBeCloseTo(4_800, 6);
    const bound = 0.25 * priced[2]! + 0.75 * priced[0]! - lambda * decision.allocation.budget;
    expect(bound).toBeCloseTo(decision.allocation.expectedLatencyMs, 6);
    expect(doc).toContain("λ* = 980,000 ms per $");
    expect(decision.allocation.budget).toBeCloseTo(0.0020625, 12);
    expect(doc).toContain(`0.25 × 4,800 + 0.75 × 8,180 − 980,000 × 0.0020625 = ${ms(bound)} ms`);
  });

  it("the λ table's breakpoints, fill costs and mixing weight follow from the verdicts", () => {
    const [cheap, dear, prepaid] = decision.routes as [RouteVerdict, RouteVerdict, RouteVerdict];
    const swap = (fast: RouteVerdict, cheaper: RouteVerdict) => (cheaper.expectedLatencyMs - fast.expectedLatencyMs) / (fast.expectedCost - cheaper.expectedCost);
    expect(ms(swap(dear, prepaid))).toBe("416,667");
    expect(ms(swap(dear, cheap))).toBe("980,000");
    expect(doc).toContain("| 0 to 416,667 | dear-fast, prepaid, cheap-slow | dear-fast 1 | $0.006, over B |");
    const viaDear = prepaid.cap * prepaid.expectedCost + (1 - prepaid.cap) * dear.expectedCost;
    const viaCheap = prepaid.cap * prepaid.expectedCost + (1 - prepaid.cap) * cheap.expectedCost;
    expect(doc).toContain(`| 416,667 to 980,000 | prepaid, dear-fast, cheap-slow | prepaid 0.25, dear-fast 0.75 | $${viaDear.toFixed(4)}, over B |`);
    expect(doc).toContain(`| above 980,000 | prepaid, cheap-slow, dear-fast | prepaid 0.25, cheap-slow 0.75 | $${viaCheap.toFixed(5)}, within B |`);
    const t = (decision.allocation.budget - viaCheap) / (viaDear - viaCheap);
    expect(t).toBeCloseTo(0.35, 12);
    expect(dear.fraction).toBeCloseTo(t * 0.75, 12);
    expect(doc).toContain("t = (0.0020625 − 0.00075) / (0.0045 − 0.00075) = 0.35");
  });

  it("shows the alpha sweep as decide() computes it", () => {
    for (const alpha of SWEEP) expect(doc, sweepRow(alpha)).toContain(sweepRow(alpha));
  });
});
