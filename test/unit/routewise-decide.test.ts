import { describe, expect, it } from "vitest";
import { RouterParamsSchema } from "../../src/core/config/routewise-schema";
import { cryptoRandom } from "../../src/lib/random";
import { decide, hedgeDelayMs, routeOrder, type Decision, type RouteVerdict } from "../../src/core/routewise/decide";
import type { Envelope, QuotaView, RouteInput } from "../../src/core/routewise/types";
import { scripted } from "../support/scripted-random";
import { CHI2_CRITICAL_1E4, chiSquare, missRate, tally } from "../support/statistics";

function envelope(over: Partial<Envelope> = {}): Envelope {
  return {
    samples: 100,
    ttftMs: { p50: 400, p95: 900 },
    totalMs: { p50: 2_000, p95: 4_000 },
    outputTokens: { p50: 200, p95: 500 },
    meanTtftMs: 500,
    meanTotalMs: 2_500,
    meanPromptTokens: 1_000,
    meanOutputTokens: 200,
    msPerOutputToken: 10,
    cachedRatio: 0,
    recent: { samples: 20, ttftMs: { p50: 400, p95: 900 } },
    ...over,
  };
}

const params = (over: object = {}) => RouterParamsSchema.parse({ output_predictor: { mode: "fixed", tokens: 200 }, ...over });
const pricing = (input: number, output: number) => ({ input, output });
const onDemand = (id: string, over: Partial<RouteInput> = {}): RouteInput => ({ id, type: "on_demand", pricing: pricing(1e-6, 2e-6), envelope: envelope(), healthy: true, ...over });
const quotaView = (over: Partial<QuotaView> = {}): QuotaView => ({ remaining: 1_000_000, limit: 1_000_000, unit: "tokens", resetInMs: null, failSafe: null, ...over });
const quotaRoute = (id: string, quota: Partial<QuotaView> = {}, over: Partial<RouteInput> = {}): RouteInput => ({ id, type: "quota", pricing: undefined, envelope: envelope(), quota: quotaView(quota), healthy: true, ...over });
const slotRoute = (id: string, slots: { free: number; limit: number }, over: Partial<RouteInput> = {}): RouteInput => ({ id, type: "concurrency", pricing: undefined, envelope: envelope(), slots, healthy: true, ...over });
const request = { promptTokens: 1_000, maxTokens: null };
const noDemand = { requestsPerS: 0 };

const verdict = (decision: Decision, id: string) => decision.routes.find((r) => r.id === id)!;

describe("decide: expected latency and cost", () => {
  it("expected latency is mean TTFT + predicted output × ms per output token", () => {
    const decision = decide({ routes: [onDemand("a", { envelope: envelope({ meanTtftMs: 300, msPerOutputToken: 7 }) })], params: params(), request, demand: noDemand });
    expect(verdict(decision, "a")).toMatchObject({ expectedLatencyMs: 300 + 200 * 7, outputTokens: 200 });
  });

  it("an unmeasured route is as slow as the slowest measured one; with none measured, 0", () => {
    const routes = [onDemand("fast", { envelope: envelope({ meanTtftMs: 100, msPerOutputToken: 1 }) }), onDemand("slow", { envelope: envelope({ meanTtftMs: 900, msPerOutputToken: 5 }) }), onDemand("new", { envelope: null })];
    const decision = decide({ routes, params: params(), request, demand: noDemand });
    expect(verdict(decision, "new").expectedLatencyMs).toBe(900 + 200 * 5);
    const none = decide({ routes: [onDemand("x", { envelope: null }), onDemand("y", { envelope: null })], params: params(), request, demand: noDemand });
    expect(none.routes.map((r) => r.expectedLatencyMs)).toEqual([0, 0]);
  });

  it("predicts output per route from its own envelope, capped by the request's max_tokens", () => {
    const routes = [onDemand("short", { envelope: envelope({ meanOutputTokens: 100 }) }), onDemand("long", { envelope: envelope({ meanOutputTokens: 800 }) })];
    const decision = decide({ routes, params: params({ output_predictor: { mode: "envelope_mean" } }), request: { promptTokens: 1_000, maxTokens: 500 }, demand: noDemand });
    expect(decision.routes.map((r) => r.outputTokens)).toEqual([100, 500]);
  });

  it("n answers cost and use n times the output, and take no longer than one", () => {
    const routes = [onDemand("paid", { pricing: pricing(1e-6, 4e-6), envelope: envelope({ meanTtftMs: 300, msPerOutputToken: 7 }) }), quotaRoute("sub", { remaining: 1_000 + 200 * 4 })];
    const one = decide({ routes, params: params(), request, demand: noDemand });
    const eight = decide({ routes, params: params(), request: { ...request, choices: 8 }, demand: noDemand });
    expect(verdict(eight, "paid")).toMatchObject({ outputTokens: 1_600, expectedLatencyMs: 300 + 200 * 7 });
    expect(verdict(eight, "paid").expectedCost).toBeCloseTo(1_000 * 1e-6 + 1_600 * 4e-6, 15);
    expect(verdict(one, "sub").feasible).toBe(true);
    expect(verdict(eight, "sub")).toMatchObject({ feasible: false, why: "quota_exhausted" });
  });

  it("expected cost is the route's price for prompt and predicted output; quota capacity is free", () => {
    const routes = [onDemand("paid", { pricing: pricing(1e-6, 4e-6) }), quotaRoute("prepaid", {}, { pricing: pricing(1e-6, 4e-6) })];
    const decision = decide({ routes, params: params(), request, demand: noDemand });
    expect(verdict(decision, "paid").expectedCost).toBeCloseTo(1_000 * 1e-6 + 200 * 4e-6, 15);
    expect(verdict(decision, "prepaid").expectedCost).toBe(0);
  });

  it("prefix_cache prices the route's cached share of the prompt at cached_input", () => {
    const route = onDemand("a", { pricing: { input: 1e-6, output: 0, cached_input: 1e-7 }, envelope: envelope({ cachedRatio: 0.5 }) });
    expect(decide({ routes: [route], params: params({ prefix_cache: true }), request, demand: noDemand }).routes[0]!.expectedCost).toBeCloseTo(500 * 1e-6 + 500 * 1e-7, 15);
    expect(decide({ routes: [route], params: params(), request, demand: noDemand }).routes[0]!.expectedCost).toBeCloseTo(1_000 * 1e-6, 15);
  });
});

describe("decide: feasibility", () => {
  const one = (route: RouteInput, over: object = {}) => decide({ routes: [route, onDemand("spare")], params: params(over), request, demand: noDemand }).routes[0]!;

  it("a token quota needs prompt + predicted output tokens left", () => {
    expect(one(quotaRoute("q", { remaining: 1_200 }))).toMatchObject({ feasible: true, why: null });
    expect(one(quotaRoute("q", { remaining: 1_199 }))).toMatchObject({ feasible: false, why: "quota_exhausted", fraction: 0, cap: 0 });
  });

  it("a request quota needs one request left", () => {
    expect(one(quotaRoute("q", { unit: "requests", remaining: 1 }))).toMatchObject({ feasible: true });
    expect(one(quotaRoute("q", { unit: "requests", remaining: 0 }))).toMatchObject({ feasible: false, why: "quota_exhausted" });
  });

  it("a quota that failed safe is infeasible whatever it says is left, and so is one not heard of yet", () => {
    expect(one(quotaRoute("q", { failSafe: "source_unreachable" }))).toMatchObject({ feasible: false, why: "quota_fail_safe" });
    expect(one(quotaRoute("q", { failSafe: "never_polled" }))).toMatchObject({ why: "quota_fail_safe" });
    expect(one({ ...quotaRoute("q"), quota: undefined })).toMatchObject({ why: "quota_fail_safe" });
  });

  it("a concurrency route needs a free slot", () => {
    expect(one(slotRoute("c", { free: 1, limit: 4 }))).toMatchObject({ feasible: true, expectedCost: 0 });
    expect(one(slotRoute("c", { free: 0, limit: 4 }))).toMatchObject({ feasible: false, why: "no_free_slot" });
    expect(one({ ...slotRoute("c", { free: 1, limit: 4 }), slots: undefined })).toMatchObject({ why: "no_free_slot" });
  });

  it("an unhealthy route is infeasible; a resource reason is named first", () => {
    expect(one(onDemand("a", { healthy: false }))).toMatchObject({ feasible: false, why: "unhealthy" });
    expect(one(quotaRoute("q", { remaining: 0 }, { healthy: false }))).toMatchObject({ why: "quota_exhausted" });
  });

  it("infeasible routes get fraction 0 and the feasible ones share all traffic", () => {
    const decision = decide({ routes: [onDemand("down", { healthy: false }), onDemand("up")], params: params(), request, demand: noDemand });
    expect(decision.routes.map((r) => r.fraction)).toEqual([0, 1]);
    expect(decision.allocation.fractions).toEqual([0, 1]);
  });
});

describe("decide: latency SLO", () => {
  const slow = envelope({ recent: { samples: 20, ttftMs: { p50: 800, p95: 2_000 } } });
  const quick = envelope({ recent: { samples: 20, ttftMs: { p50: 300, p95: 900 } } });

  it("a route whose recent TTFT at the SLO percentile exceeds the SLO is infeasible while another meets it", () => {
    const decision = decide({ routes: [onDemand("slow", { envelope: slow, pricing: pricing(0, 0) }), onDemand("quick", { envelope: quick })], params: params({ latency_slo_ms: 1_000 }), request, demand: noDemand });
    expect(verdict(decision, "slow")).toMatchObject({ feasible: false, why: "slo_miss", fraction: 0 });
    expect(verdict(decision, "quick")).toMatchObject({ feasible: true, fraction: 1 });
    expect(decision.sloRelaxed).toBe(false);
  });

  it("reads the SLO percentile, or the nearest stored one above it", () => {
    const routes = [onDemand("slow", { envelope: slow }), onDemand("quick", { envelope: quick })];
    // p50 of slow is 800: within a 1,000 ms SLO at p50; at p75 the nearest stored is p95 (2,000).
    expect(verdict(decide({ routes, params: params({ latency_slo_ms: 1_000, latency_slo_percentile: 50 }), request, demand: noDemand }), "slow").feasible).toBe(true);
    expect(verdict(decide({ routes, params: params({ latency_slo_ms: 1_000, latency_slo_percentile: 75 }), request, demand: noDemand }), "slow").why).toBe("slo_miss");
  });

  it("a route with fewer than envelope_min_samples recent samples cannot be judged: one slow answer does not shut it out", () => {
    const once = envelope({ recent: { samples: 1, ttftMs: { p50: 5_000, p95: 5_000 } } });
    const routes = [onDemand("once", { envelope: once }), onDemand("quick", { envelope: quick })];
    expect(verdict(decide({ routes, params: params({ latency_slo_ms: 1_000, envelope_min_samples: 2 }), request, demand: noDemand }), "once").feasible).toBe(true);
    expect(verdict(decide({ routes, params: params({ latency_slo_ms: 1_000, envelope_min_samples: 1 }), request, demand: noDemand }), "once").why).toBe("slo_miss");
  });

  it("a route with no recent samples cannot be judged and stays feasible", () => {
    const unjudged = envelope({ recent: { samples: 0, ttftMs: {} } });
    const decision = decide({ routes: [onDemand("slow", { envelope: slow }), onDemand("unjudged", { envelope: unjudged }), onDemand("new", { envelope: null })], params: params({ latency_slo_ms: 1_000 }), request, demand: noDemand });
    expect(decision.routes.map((r) => r.why)).toEqual(["slo_miss", null, null]);
  });

  it("when every feasible route misses the SLO, the SLO is set aside", () => {
    const decision = decide({ routes: [onDemand("slow", { envelope: slow }), onDemand("also-slow", { envelope: slow }), onDemand("down", { healthy: false, envelope: quick })], params: params({ latency_slo_ms: 1_000 }), request, demand: noDemand });
    expect(decision.sloRelaxed).toBe(true);
    expect(decision.routes.map((r) => r.why)).toEqual([null, null, "unhealthy"]);
    expect(decision.allocation.fractions.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
  });

  it("no SLO, no SLO check; no feasible route at all is not a relaxed SLO", () => {
    expect(decide({ routes: [onDemand("slow", { envelope: slow })], params: params(), request, demand: noDemand }).routes[0]!.feasible).toBe(true);
    const none = decide({ routes: [onDemand("down", { healthy: false, envelope: slow })], params: params({ latency_slo_ms: 1_000 }), request, demand: noDemand });
    expect(none.sloRelaxed).toBe(false);
    expect(none.routes[0]!.why).toBe("unhealthy");
  });
});

describe("decide: caps", () => {
  it("a quota is paced to last until it resets: remaining ÷ (requests/s × seconds to reset × units per request)", () => {
    // 2 req/s × 3,600 s × 1,200 tokens = 8,640,000 tokens at full traffic; 2,160,000 left → 0.25.
    const routes = [quotaRoute("q", { remaining: 2_160_000, resetInMs: 3_600_000 }), onDemand("paid")];
    const decision = decide({ routes, params: params(), request, demand: { requestsPerS: 2 } });
    expect(verdict(decision, "q").cap).toBeCloseTo(0.25, 12);
    expect(verdict(decision, "q").fraction).toBeCloseTo(0.25, 12); // free and as fast: filled to its cap
    expect(verdict(decision, "paid").fraction).toBeCloseTo(0.75, 12);
  });

  it("a request quota paces by requests", () => {
    const routes = [quotaRoute("q", { unit: "requests", remaining: 360, resetInMs: 3_600_000 }), onDemand("paid")];
    expect(verdict(decide({ routes, params: params(), request, demand: { requestsPerS: 1 } }), "q").cap).toBeCloseTo(0.1, 12);
  });

  it("an unpaced quota (no demand yet, or no reset time) may take everything", () => {
    expect(verdict(decide({ routes: [quotaRoute("q", { remaining: 2_000, resetInMs: 3_600_000 })], params: params(), request, demand: noDemand }), "q").cap).toBe(1);
    expect(verdict(decide({ routes: [quotaRoute("q", { remaining: 2_000, resetInMs: null })], params: params(), request, demand: { requestsPerS: 50 } }), "q").cap).toBe(1);
    expect(verdict(decide({ routes: [quotaRoute("q", { remaining: 1e12, resetInMs: 1_000 })], params: params(), request, demand: { requestsPerS: 50 } }), "q").cap).toBe(1);
  });

  it("a concurrency route is capped by Little's law: slots ÷ (requests/s × mean seconds per request)", () => {
    // 10 req/s × 2.5 s = 25 in flight at full traffic; 5 slots carry a fifth.
    const routes = [slotRoute("c", { free: 2, limit: 5 }), onDemand("paid", { pricing: pricing(1e-6, 1e-6) })];
    const decision = decide({ routes, params: params(), request, demand: { requestsPerS: 10 } });
    expect(verdict(decision, "c").cap).toBeCloseTo(0.2, 12);
    expect(verdict(decision, "c").fraction).toBeCloseTo(0.2, 12);
    expect(verdict(decide({ routes: [slotRoute("c", { free: 2, limit: 5 }, { envelope: null })], params: params(), request, demand: { requestsPerS: 10 } }), "c").cap).toBe(1);
    expect(verdict(decide({ routes, params: params(), request, demand: noDemand }), "c").cap).toBe(1);
  });

  it("caps summing below 1 are reported, each route at its scaled cap", () => {
    const routes = [quotaRoute("q", { remaining: 1_200_000, resetInMs: 1_000_000 }), slotRoute("c", { free: 1, limit: 10 })];
    const decision = decide({ routes, params: params(), request, demand: { requestsPerS: 10 } }); // caps 0.1 and 0.4
    expect(decision.allocation.capacityShort).toBe(true);
    expect(decision.routes.map((r) => r.fraction)).toEqual([expect.closeTo(0.2, 12), expect.closeTo(0.8, 12)]);
  });
});

describe("decide: budget", () => {
  it("alpha 0 sends everything to the cheapest route, alpha 1 to the fastest", () => {
    const routes = [onDemand("cheap", { pricing: pricing(1e-7, 1e-7), envelope: envelope({ meanTtftMs: 2_000 }) }), onDemand("fast", { pricing: pricing(1e-5, 1e-5), envelope: envelope({ meanTtftMs: 100 }) })];
    expect(decide({ routes, params: params({ budget_alpha: 0 }), request, demand: noDemand }).routes.map((r) => r.fraction)).toEqual([1, 0]);
    expect(decide({ routes, params: params({ budget_alpha: 1 }), request, demand: noDemand }).routes.map((r) => r.fraction)).toEqual([0, 1]);
  });
});

describe("routeOrder", () => {
  const v = (id: string, fraction: number, expectedLatencyMs: number, expectedCost = 0, feasible = true): RouteVerdict => ({ id, feasible, why: feasible ? null : "unhealthy", expectedCost, expectedLatencyMs, cap: feasible ? 1 : 0, fraction, outputTokens: 1 });
  const decision = (routes: RouteVerdict[]): Decision => ({ routes, allocation: { fractions: routes.map((r) => r.fraction), budget: 0, cheapest: 0, dearest: 0, expectedCost: 0, expectedLatencyMs: 0, budgetMet: true, capacityShort: false }, sloRelaxed: false });
  const split = decision([v("a", 0.15, 300), v("down", 0, 1, 0, false), v("b", 0.25, 200, 2), v("c", 0.6, 200, 1)]);

  it("draws the first by fractions (a 53-bit float), then the other feasible routes fastest first, then cheaper", () => {
    expect(routeOrder(split, scripted([0, 0]))).toEqual(["a", "c", "b"]); // 0 → a
    expect(routeOrder(split, scripted([2 ** 31, 0]))).toEqual(["c", "b", "a"]); // 0.5 ≥ 0.15 + 0.25 → c
    expect(routeOrder(split, scripted([2 ** 32 - 1, 2 ** 32 - 1]))).toEqual(["c", "b", "a"]);
    expect(routeOrder(split, scripted([Math.floor(0.2 * 2 ** 32), 0]))).toEqual(["b", "c", "a"]); // 0.2 → b
  });

  it("each route owns a half-open interval: a draw exactly on a boundary goes to the next route", () => {
    expect(routeOrder(decision([v("a", 0.5, 100), v("b", 0.5, 100)]), scripted([2 ** 31, 0]))).toEqual(["b", "a"]);
  });

  it("never lists an infeasible route, and lists feasible routes with fraction 0 as fallbacks", () => {
    const order = routeOrder(decision([v("down", 0, 1, 0, false), v("only", 1, 500), v("idle", 0, 100)]), scripted([2 ** 31, 0]));
    expect(order).toEqual(["only", "idle"]);
  });

  it("with no feasible route, no order", () => {
    expect(routeOrder(decision([v("down", 0, 1, 0, false)]), scripted([]))).toEqual([]);
  });

  // Statistical check of the first pick: 20,000 crypto draws against fractions
  // 0.15/0.25/0.6 (2 degrees of freedom), failing when Pearson's chi-square passes the
  // p = 1e-4 critical value: a correct implementation fails by chance once in 10,000
  // runs. A router 5 points off (0.15/0.20/0.65) passes with probability < 1e-20; a
  // uniform pick (1/3 each) is off by far more, and both are run to show they fail.
  const DRAWS = 20_000;
  const SHARES = [0.15, 0.25, 0.6];
  const firstPicks = (d: Decision) => {
    const ids = d.routes.filter((r) => r.feasible).map((r) => r.id);
    const random = cryptoRandom();
    return tally(ids.length, DRAWS, () => ids.indexOf(routeOrder(d, random)[0]!));
  };
  const threeWay = (fractions: number[]) => decision(fractions.map((f, i) => v(`r${i}`, f, 100 * (3 - i))));

  it("picks first by the fractions within a chi-square bound over 20,000 draws", () => {
    const counts = firstPicks(threeWay(SHARES));
    expect(chiSquare(counts, SHARES, DRAWS), `${counts}`).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });

  it("that test fails a router 5 points off and a uniform pick: computed and run", () => {
    expect(missRate(DRAWS, 0.25, 0.2, CHI2_CRITICAL_1E4[2])).toBeLessThan(1e-20);
    const biased = firstPicks(threeWay([0.15, 0.2, 0.65]));
    expect(chiSquare(biased, SHARES, DRAWS), `${biased}`).toBeGreaterThan(CHI2_CRITICAL_1E4[2]);
    const uniform = firstPicks(threeWay([1 / 3, 1 / 3, 1 / 3]));
    expect(chiSquare(uniform, SHARES, DRAWS), `${uniform}`).toBeGreaterThan(CHI2_CRITICAL_1E4[2]);
  });
});

describe("hedgeDelayMs", () => {
  const recent = envelope({ recent: { samples: 20, ttftMs: { p50: 400, p95: 900, p99: 1_500 } } });

  it("off: no hedge", () => {
    expect(hedgeDelayMs(params({ latency_hedge_mode: "off", latency_slo_ms: 1_000 }), recent)).toBeNull();
  });

  it("slo: the SLO itself, none without one", () => {
    expect(hedgeDelayMs(params({ latency_hedge_mode: "slo", latency_slo_ms: 1_000 }), null)).toBe(1_000);
    expect(hedgeDelayMs(params({ latency_hedge_mode: "slo" }), recent)).toBeNull();
  });

  it("percentile: the route's recent TTFT at the SLO percentile, the nearest stored above it when not stored", () => {
    expect(hedgeDelayMs(params({ latency_hedge_mode: "percentile" }), recent)).toBe(900);
    expect(hedgeDelayMs(params({ latency_hedge_mode: "percentile", latency_slo_percentile: 97 }), recent)).toBe(1_500);
    expect(hedgeDelayMs(params({ latency_hedge_mode: "percentile", latency_slo_percentile: 99.9 }), recent)).toBe(1_500);
  });

  it("percentile: none without recent samples", () => {
    expect(hedgeDelayMs(params({ latency_hedge_mode: "percentile" }), null)).toBeNull();
    expect(hedgeDelayMs(params({ latency_hedge_mode: "percentile" }), envelope({ recent: { samples: 0, ttftMs: {} } }))).toBeNull();
  });
});

describe("decide: numbers it must not believe", () => {
  // Whatever storage, another isolate or a client hands it, the decision answers with finite numbers and never throws.
  const poisons = [NaN, Infinity, -Infinity, 1e308, -1];
  it("never throws, and every number it answers is finite", () => {
    for (const bad of poisons) {
      const routes: RouteInput[] = [
        onDemand("env", { envelope: envelope({ meanTtftMs: bad, msPerOutputToken: bad, meanOutputTokens: bad, cachedRatio: bad, ttftMs: { p50: bad }, recent: { samples: 20, ttftMs: { p50: bad } } }) }),
        onDemand("price", { pricing: pricing(bad >= 0 ? bad : 1e-6, 2e-6) }),
        quotaRoute("quota", { remaining: bad, resetInMs: bad }),
        slotRoute("slots", { free: bad, limit: bad }, { envelope: envelope({ meanTotalMs: bad }) }),
        onDemand("plain"),
      ];
      for (const mode of ["envelope_mean", "envelope_percentile", "max_tokens", "fixed"] as const) {
        const decision = decide({
          routes,
          params: params({ output_predictor: { mode, tokens: 200, percentile: 95 }, latency_slo_ms: 1_000 }),
          request: { promptTokens: bad, maxTokens: bad },
          demand: { requestsPerS: bad },
        });
        const numbers = decision.routes.flatMap((r) => [r.expectedCost, r.expectedLatencyMs, r.cap, r.fraction, r.outputTokens]);
        numbers.push(decision.allocation.budget, decision.allocation.expectedCost, decision.allocation.expectedLatencyMs);
        expect(numbers.every(Number.isFinite), `${bad} ${mode}: ${JSON.stringify(decision.routes)}`).toBe(true);
        expect(verdict(decision, "plain").feasible).toBe(true);
        expect(routeOrder(decision, cryptoRandom())).toContain("plain");
      }
      expect(hedgeDelayMs(params({ latency_hedge_mode: "percentile" }), envelope({ recent: { samples: 3, ttftMs: { p95: bad } } })), String(bad)).toBe(Number.isFinite(bad) && bad >= 0 ? bad : null);
    }
  });

  it("a quota whose remaining units are not a number fails safe", () => {
    for (const bad of [NaN, Infinity, -1]) {
      expect(verdict(decide({ routes: [quotaRoute("q", { remaining: bad })], params: params(), request, demand: noDemand }), "q").why, String(bad)).toBe("quota_fail_safe");
    }
  });
});
