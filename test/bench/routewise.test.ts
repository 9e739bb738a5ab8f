/** The RouteWise bench's pure parts (bench/routewise/): configs, requests, spend, summary, report. */
import { describe, expect, it } from "vitest";
import type { Outcome } from "../../bench/routewise/client";
import { routerCounters, spendOf, summariseRow, type ProviderTally } from "../../bench/routewise/measure";
import { DEFAULTS, parseOptions } from "../../bench/routewise/options";
import { PROVIDER_IDS, providerSpecs, type ProviderId } from "../../bench/routewise/providers";
import { comparisons, quotaUse, shares, spendCheck, table, type Measured } from "../../bench/routewise/report";
import { ROW_NAMES, configProblems, decimal, hedgeSloMs, routerConfig, rowOf } from "../../bench/routewise/rows";
import { DEFAULT_SIZE, makeRequests } from "../../bench/routewise/workload";

const specs = providerSpecs({ seed: 1, quotaWindowS: 10, quotaTokens: 6000, slots: 2 });
const urls = new Map<ProviderId, string>(PROVIDER_IDS.map((id, i) => [id, `http://127.0.0.1:${9001 + i}`]));

describe("router configs", () => {
  it("the router's own loader accepts every row's config", () => {
    for (const name of ROW_NAMES) expect(configProblems(routerConfig(rowOf(name, specs), specs, urls, 10)), name).toBeNull();
  });

  it("a fixed row is a weighted pool over the providers it weights; a RouteWise row routes over all four with the same prices", () => {
    const fixed = routerConfig(rowOf("fixed-60-40", specs), specs, urls, 10);
    expect(fixed).toContain("policy: weighted");
    expect(fixed).toContain(`{ id: cheap, url: "http://127.0.0.1:9001", weight: 60 }`);
    expect(fixed).not.toContain("id: sub");
    const rw = routerConfig(rowOf("alpha-0.25-hedge", specs), specs, urls, 10);
    expect(rw).toContain("budget_alpha: 0.25");
    expect(rw).toContain(`latency_hedge_mode: slo, latency_slo_ms: ${hedgeSloMs(specs)}`);
    expect(rw).toContain("pricing: { input: 0.0000005, output: 0.0000015 }");
    expect(rw).toContain(`quota: { limit: 6000, unit: tokens }`);
    expect(rw).toContain(`url: "http://127.0.0.1:9003/usage"`);
    expect(rw).toContain("window_s: 10");
    expect(rw).toContain("concurrency: { limit: 2 }");
    expect(hedgeSloMs(specs)).toBe(450);
  });

  it("writes prices as plain decimals that read back exactly", () => {
    expect(decimal(0.5e-6)).toBe("0.0000005");
    expect(decimal(15e-6)).toBe("0.000015");
    expect(decimal(2)).toBe("2.0");
    for (const x of [0.5e-6, 1.5e-6, 5e-6, 15e-6]) expect(Number(decimal(x))).toBe(x);
  });
});

describe("requests", () => {
  it("the same seed gives the same requests, within the size bounds; another seed differs", () => {
    const a = makeRequests(1, 50);
    expect(makeRequests(1, 50)).toEqual(a);
    expect(makeRequests(2, 50)).not.toEqual(a);
    for (const r of a) {
      expect(r.maxTokens).toBeGreaterThanOrEqual(DEFAULT_SIZE.minTokens);
      expect(r.maxTokens).toBeLessThanOrEqual(DEFAULT_SIZE.maxTokens);
      expect(r.messages[1]!.content.length).toBeGreaterThan(DEFAULT_SIZE.minChars);
    }
  });
});

describe("options", () => {
  it("defaults, --quick, and a bad value named", () => {
    const o = parseOptions([]);
    expect(o).toMatchObject({ requests: DEFAULTS.requests, concurrency: DEFAULTS.concurrency, rows: [...ROW_NAMES] });
    expect(parseOptions(["--quick"])).toMatchObject({ requests: DEFAULTS.quickRequests, quick: true });
    expect(parseOptions(["--rows", "alpha-1,fixed-60-40"])).toMatchObject({ rows: ["fixed-60-40", "alpha-1"] });
    expect(() => parseOptions(["--rows", "alpha-2"])).toThrow(/--rows: unknown "alpha-2"/);
    expect(() => parseOptions(["--requests", "0"])).toThrow(/--requests/);
  });
});

const tally = (id: string, prompt: number, completion: number, extra: Partial<ProviderTally> = {}): ProviderTally => ({
  id,
  tokens: { prompt, completion, cached: 0 },
  completed: 0,
  aborted: 0,
  quotaRejected: 0,
  concurrencyRejected: 0,
  slow: 0,
  ...extra,
});

const ok = (route: string, totalMs: number, hedged = false): Outcome => ({ ok: true, route, hedged, ttftMs: totalMs / 2, totalMs, promptTokens: 10, outputTokens: 5 });

describe("spend", () => {
  it("is prompt tokens × input + output tokens × output, and nothing on a provider without a price", () => {
    expect(spendOf({ prompt: 1_000_000, completion: 1_000_000, cached: 0 }, { input: 0.5e-6, output: 1.5e-6 })).toBeCloseTo(2, 12);
    expect(spendOf({ prompt: 1000, completion: 1000, cached: 0 }, null)).toBe(0);
  });

  it("a row sums its providers' spend from their own tokens, per 1k requests sent, with 429s, hedges and shares", () => {
    const outcomes: Outcome[] = [ok("cheap", 100), ok("cheap", 300), ok("fast", 50, true), ok("sub", 200), { ok: false, error: "HTTP 503", route: null, hedged: false }];
    const r = summariseRow(
      { outcomes, elapsedMs: 2000 },
      [tally("cheap", 2_000_000, 0), tally("fast", 0, 100_000, { aborted: 1 }), tally("sub", 900, 100, { quotaRejected: 3 }), tally("slots", 0, 0, { concurrencyRejected: 2 })],
      specs,
      { spend: 2.5, hedgesFired: 1 },
    );
    expect(r.spend).toBeCloseTo(1 + 1.5, 12); // cheap 2M prompt × $0.5/M, fast 100k output × $15/M; sub free
    expect(r.spendPer1k).toBeCloseTo((2.5 / 5) * 1000, 9);
    expect(r).toMatchObject({ requests: 5, ok: 4, errors: 1, errorKinds: { "HTTP 503": 1 }, hedges: 1, quota429: 3, concurrency429: 2, aborted: 1, quotaTokensUsed: 1000 });
    expect(r.answeredBy).toEqual({ cheap: 2, fast: 1, sub: 1 });
    expect(r.latencyP50).toBe(100);
    expect(r.latencyP99).toBe(300);
    expect(r.rps).toBe(2);
    expect(spendCheck(r)).toBe("+0.0%");
    expect(quotaUse(r, 10)).toBe("1,000 (1)");
    expect(quotaUse({ ...r, elapsedMs: 20_001 }, 10)).toBe("1,000 (3)");
  });
});

describe("router counters", () => {
  it("sums one model's spend over routes and its fired hedges, ignoring other models and events", () => {
    const text = [
      "# TYPE switchyard_routewise_spend_total counter",
      'switchyard_routewise_spend_total{model="m",route="cheap"} 0.25',
      'switchyard_routewise_spend_total{model="m",route="fast"} 1.5',
      'switchyard_routewise_spend_total{model="other",route="fast"} 9',
      'switchyard_routewise_hedges_total{model="m",event="fired"} 4',
      'switchyard_routewise_hedges_total{model="m",event="won_by_hedge"} 3',
    ].join("\n");
    expect(routerCounters(text, "m")).toEqual({ spend: 1.75, hedgesFired: 4 });
  });
});

describe("report", () => {
  const result = (spendPer1k: number, latencyP99: number, answeredBy: Record<string, number>, router: { spend: number; hedgesFired: number } | null = null) => ({
    ...summariseRow({ outcomes: [ok("cheap", latencyP99)], elapsedMs: 1000 }, [], specs, router),
    spendPer1k,
    spend: spendPer1k,
    answeredBy,
  });

  it("shares are whole percentages in provider order, anything unknown listed after", () => {
    expect(shares({ cheap: 3, fast: 1 })).toBe("75/25/0/0%");
    expect(shares({ sub: 1, "?": 1 })).toBe("0/0/50/0% (+1 ?)");
    expect(shares({})).toBe("–");
  });

  it("compares every row with the fixed 60/40 split", () => {
    const rows: Measured[] = [
      { row: rowOf("fixed-60-40", specs), result: result(0.8, 1800, { cheap: 6, fast: 4 }) },
      { row: rowOf("alpha-0.25-hedge", specs), result: { ...result(0.6, 600, { fast: 5, sub: 5 }, { spend: 0.6, hedgesFired: 2 }), hedges: 2 } },
    ];
    const lines = table(rows, 10);
    expect(lines[2]).toMatch(/^\| fixed 60\/40 cheap\/fast \| \$0\.800 \| 1\.00x \|.*\| 60\/40\/0\/0% \| 0 \(1\) \|.*\| – \|$/);
    expect(lines[3]).toMatch(/^\| routewise α=0\.25, hedge at 450 ms \| \$0\.600 \| 0\.75x \|.*\| 2 \(2\) \| \+0\.0% \|$/);
    expect(comparisons(rows)).toEqual(["- **routewise α=0.25, hedge at 450 ms** vs fixed 60/40: 75.0% of its spend, p99 600 ms against 1800 (−66.7%); 2 hedges."]);
  });
});
