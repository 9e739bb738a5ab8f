/**
 * RouteWise through the whole router in workerd, against fake metered providers on
 * 127.0.0.1 (tools/fakes/fake-provider.ts): the budget, quotas from a usage API (and failing
 * safe without one), concurrency slots shared across isolates, calibration, hedging, and
 * what /routing and /metrics show.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { FakeProviderBehaviour, FleetProvider } from "../support/fleet";
import { providersClosedAfterEach, spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, openAIErrorOf, post, publish, routerFetch } from "../support/router";
import { frozenClock, metricsText, metricValue } from "../support/state";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { envelopeObjectName, quotaObjectName } from "../../src/app/state/object-names";

const providers = providersClosedAfterEach();
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

interface RouteLine {
  id: string;
  provider: FleetProvider;
  /** The YAML of the route's resource fields, e.g. `provider_type: on_demand, pricing: {...}`. */
  fields: string;
}

const PRICE = {
  cheap: "pricing: { input: 0.000001, output: 0.000002 }",
  dear: "pricing: { input: 0.00001, output: 0.00002 }",
};

function config(model: string, routes: RouteLine[], params: string): string {
  const lines = routes.map((r) => `      - { id: ${r.id}, url: "${r.provider.url}", ${r.fields} }`).join("\n");
  return `models:\n  ${model}:\n    router: routewise\n    router_params: { ${params} }\n    routes:\n${lines}\n`;
}

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function calibrate(model: string, body: unknown = { probes: 3, max_tokens: 4 }) {
  const res = await post(`/admin/routewise/${model}/calibrate`, body, admin);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`calibrate answered ${res.status}: ${text}`);
  return JSON.parse(text) as { calibrated: boolean; samples: Record<string, number>; failures: Record<string, string> };
}

async function ask(model: string, extra: Record<string, unknown> = {}, via: "A" | "B" = "A") {
  const body = { model, max_tokens: 8, messages: [{ role: "user", content: "How deep is the sea?" }], ...extra };
  const started = Date.now();
  const res =
    via === "A"
      ? await post("/v1/chat/completions", body)
      : await env.ROUTER_B.fetch(new Request("https://router.test/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
  const text = await res.text();
  return { status: res.status, route: res.headers.get("x-switchyard-route"), hedge: res.headers.get("x-switchyard-hedge"), ms: Date.now() - started, text };
}

async function routingOf(model: string) {
  const res = await routerFetch("/routing", { headers: admin });
  const body = (await res.json()) as { models: Record<string, RouteWiseView> };
  return body.models[model]!;
}

interface RouteWiseView {
  router: string;
  calibrated: boolean;
  budget: { cheapest: number; dearest: number; limit: number; expected_cost: number };
  routes: {
    id: string;
    fraction: number;
    feasible: boolean;
    why_not: string | null;
    expected_cost: number;
    quota: { remaining: number | null; fail_safe: string | null; last_error: string | null } | null;
    concurrency: { limit: number; granted: number | null } | null;
    envelope: { samples: number; ttft_ms: Record<string, number>; total_ms: Record<string, number> } | null;
  }[];
}

const tally = (routes: (string | null)[]) => routes.reduce<Record<string, number>>((t, r) => ((t[r ?? "none"] = (t[r ?? "none"] ?? 0) + 1), t), {});

describe("the cost budget", () => {
  const behaviours: FakeProviderBehaviour[] = [{ ttftMs: 120 }, { ttftMs: 5 }];

  it("alpha 0 sends everything to the cheapest route, alpha 1 to the fastest", async () => {
    const [slow, fast] = await providers(behaviours, "budget");
    for (const [alpha, expected] of [[0, "cheap"], [1, "fast"]] as const) {
      const model = unique(`budget-${alpha}`);
      await publish(config(model, [{ id: "cheap", provider: slow!, fields: `provider_type: on_demand, ${PRICE.cheap}` }, { id: "fast", provider: fast!, fields: `provider_type: on_demand, ${PRICE.dear}` }], `budget_alpha: ${alpha}, envelope_min_samples: 3`));
      await calibrate(model);
      const routes: (string | null)[] = [];
      for (let i = 0; i < 12; i++) routes.push((await ask(model)).route);
      expect(tally(routes), `alpha ${alpha}`).toEqual({ [expected]: 12 });
    }
  });

  it("a middle alpha mixes the two so that the spend per request stays within the budget /routing shows", async () => {
    const [slow, fast] = await providers(behaviours, "mix");
    const model = unique("mix");
    await publish(config(model, [{ id: "cheap", provider: slow!, fields: `provider_type: on_demand, ${PRICE.cheap}` }, { id: "fast", provider: fast!, fields: `provider_type: on_demand, ${PRICE.dear}` }], "budget_alpha: 0.5, envelope_min_samples: 3"));
    await calibrate(model);
    const view = await routingOf(model);
    const fractions = Object.fromEntries(view.routes.map((r) => [r.id, r.fraction]));
    // The LP spends exactly the budget: halfway in cost is halfway in traffic between two routes.
    expect(fractions.fast).toBeCloseTo(0.5, 2);
    expect(view.budget.expected_cost).toBeLessThanOrEqual(view.budget.limit * (1 + 1e-9));

    // 60 requests: fast ~ Binomial(60, 0.5); [15, 45] fails with probability < 1e-4, and
    // both "always cheap" and "always fast" fall outside it.
    const routes: (string | null)[] = [];
    for (let i = 0; i < 60; i++) routes.push((await ask(model)).route);
    const counts = tally(routes);
    expect(counts.fast ?? 0).toBeGreaterThanOrEqual(15);
    expect(counts.fast ?? 0).toBeLessThanOrEqual(45);
  });
});

describe("quotas", () => {
  it("a quota-bearing model answers 503 naming the uncalibrated routes until calibrated", async () => {
    const [paid, quota] = await providers([{}, { quotaLimit: 100_000 }], "uncal");
    const model = unique("uncal");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` },
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 100000 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, reset_path: data.reset_at, window_s: 3600 }` },
      ], "envelope_min_samples: 2"),
    );
    const refused = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });
    expect(refused.status).toBe(503);
    const error = await openAIErrorOf(refused);
    expect(error.code).toBe("routewise_uncalibrated");
    expect(error.message).toContain("route 'paid' (0)");
    expect(error.message).toContain("route 'sub' (0)");
    expect((await paid!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);

    const seeded = await calibrate(model, { probes: 2, max_tokens: 2 });
    expect(seeded.calibrated).toBe(true);
    expect((await ask(model)).status).toBe(200);
  });

  it("free quota is used first, never past its limit, and traffic moves to the paid route when it runs out", async () => {
    // Each request costs ~12 tokens (a 6-token prompt estimate, 8 output); the quota holds a few.
    const [paid, quota] = await providers([{}, { quotaLimit: 150 }], "quota");
    const model = unique("quota");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` },
        // A rolling window has no reset to pace the quota toward: free capacity is simply used first.
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 150 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, limit_path: data.limit, window: rolling, window_s: 3600 }` },
      ], "envelope_min_samples: 1"),
    );
    await calibrate(model, { samples: [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
    const routes: (string | null)[] = [];
    for (let i = 0; i < 20; i++) routes.push((await ask(model)).route);
    const firstPaid = routes.indexOf("paid");
    expect(firstPaid, routes.join(",")).toBeGreaterThan(3); // the free route went first, several times
    expect(routes.slice(firstPaid).every((r) => r === "paid"), routes.join(",")).toBe(true);
    const stats = await quota!.stats();
    expect(stats.quotaRejected, "the router never sent past the quota").toBe(0);
    expect(stats.quota.used).toBeLessThanOrEqual(150);

    const view = await routingOf(model);
    const sub = view.routes.find((r) => r.id === "sub")!;
    expect(sub.feasible).toBe(false);
    expect(sub.why_not).toBe("quota_exhausted");
    expect(sub.quota!.remaining).toBeLessThan(20);
    const text = await metricsText();
    expect(metricValue(text, "switchyard_routewise_quota_exhaustions_total", { reason: "used_up" })).toBeGreaterThanOrEqual(1);
  });

  it("requests in flight hold their share of the quota: ten at once never spend past it", async () => {
    const [paid, quota] = await providers([{}, { quotaLimit: 60, ttftMs: 200 }], "burst");
    const model = unique("burst");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` },
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 60 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, window: rolling, window_s: 3600 }` },
      ], "envelope_min_samples: 1"),
    );
    await calibrate(model, { samples: [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
    const answers = await Promise.all(Array.from({ length: 10 }, () => ask(model)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const counts = tally(answers.map((a) => a.route));
    // Each request needs ~14 tokens: the quota carries 4 of them, not 10.
    expect(counts.sub ?? 0, JSON.stringify(counts)).toBeGreaterThanOrEqual(1);
    expect(counts.sub ?? 0, JSON.stringify(counts)).toBeLessThanOrEqual(4);
    expect((await quota!.stats()).quota.used).toBeLessThanOrEqual(60);
  });

  it("fails safe: an unreachable usage API makes the quota count as exhausted, and /routing says why", async () => {
    const [paid, quota] = await providers([{}, { usageDown: true }], "failsafe");
    const model = unique("failsafe");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.dear}` },
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 100000 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, window_s: 3600 }` },
      ], "envelope_min_samples: 1"),
    );
    await calibrate(model, { samples: [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
    for (let i = 0; i < 5; i++) expect((await ask(model)).route).toBe("paid");
    expect((await quota!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);
    const sub = (await routingOf(model)).routes.find((r) => r.id === "sub")!;
    expect(sub.why_not).toBe("quota_fail_safe");
    expect(sub.quota!.fail_safe).toBe("never_polled");
    expect(sub.quota!.last_error).toContain("503");
  });
});

describe("quota polling starts with the config", () => {
  it("publishing a config makes each quota's object poll its usage API before any request", async () => {
    const [quota] = await providers([{ quotaLimit: 5_000, usageKey: "usage-secret" }], "announce");
    await quota!.setUsed(1_200);
    const model = unique("announce");
    await publish(
      config(model, [
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 5000 }, quota_source: { url: "${quota!.url}/usage", auth: usage-secret, used_path: data.used, limit_path: data.limit, reset_path: data.reset_at, window_s: 3600 }` },
      ], "envelope_min_samples: 1"),
    );
    const stub = env.PROVIDER_QUOTA.getByName(quotaObjectName(`${model}/sub`));
    await expect.poll(async () => (await stub.snapshot()).polledAt, { timeout: 5_000 }).not.toBeNull();
    const state = await stub.snapshot();
    expect(state).toMatchObject({ remaining: 3_800, limit: 5_000, failSafe: null, lastError: null });
    expect((await quota!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);
    // The usage API's key is used, never stored.
    const stored = await runInDurableObject(stub, async (_instance, state) => JSON.stringify(Object.fromEntries(await state.storage.list())));
    expect(stored).toContain(quota!.url);
    expect(stored).not.toContain("usage-secret");
  });
});

describe("quota source lost after it worked", () => {
  it("keeps using the last poll until stale_after_s, then fails safe as source_unreachable", async () => {
    const clock = frozenClock();
    try {
      const [paid, quota] = await providers([{}, { quotaLimit: 100_000 }], "stale");
      const model = unique("stale");
      const quotaId = `${model}/sub`;
      await publish(
        config(model, [
          { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.dear}` },
          { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 100000 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, window: rolling, window_s: 3600, stale_after_s: 60 }` },
        ], "envelope_min_samples: 1"),
      );
      await calibrate(model, { samples: [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
      expect((await ask(model)).route).toBe("sub");
      await quota!.setBehaviour({ quotaLimit: 100_000, usageDown: true });
      await runDurableObjectAlarm(env.PROVIDER_QUOTA.getByName(quotaObjectName(quotaId)));
      clock.advance(30_000); // within the bound: the last good poll still counts
      expect((await ask(model)).route).toBe("sub");
      clock.advance(31_000);
      await expect.poll(async () => (await ask(model)).route, { timeout: 5_000 }).toBe("paid");
      const sub = (await routingOf(model)).routes.find((r) => r.id === "sub")!;
      expect(sub.quota!.fail_safe).toBe("source_unreachable");
      expect(sub.quota!.last_error).toContain("503");
      expect(metricValue(await metricsText(), "switchyard_routewise_quota_exhaustions_total", { quota: quotaId, reason: "fail_safe" })).toBe(1);
    } finally {
      clock.restore();
    }
  });
});

describe("shared quota pools", () => {
  it("routes of two models on one quota_pool decrement one quota: when one model uses it up, the other stops using it too", async () => {
    const [paid, quota] = await providers([{}, { quotaLimit: 150 }], "shared");
    const [first, second] = [unique("shared-a"), unique("shared-b")];
    const pool = unique("team");
    const source = `quota_source: { url: "${quota!.url}/usage", used_path: data.used, limit_path: data.limit, window: rolling, window_s: 3600 }`;
    const model = (name: string) =>
      `  ${name}:\n    router: routewise\n    router_params: { envelope_min_samples: 1 }\n    routes:\n` +
      `      - { id: paid, url: "${paid!.url}", provider_type: on_demand, ${PRICE.cheap} }\n` +
      `      - { id: sub, url: "${quota!.url}", provider_type: quota, quota: { limit: 150 }, quota_pool: ${pool}, ${source} }\n`;
    await publish(`models:\n${model(first)}${model(second)}`);
    const samples = [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }];
    await calibrate(first, { samples });
    await calibrate(second, { samples });
    // Both models poll the usage API now, while it still says 0: afterwards only the isolates' reports tell.
    expect((await ask(second)).route).toBe("sub");
    // The first model uses the quota up. How many requests that takes depends on the split,
    // which follows live latency (some go to the paid route): ~11 fit in 150 tokens, so 60 are ample.
    const firstRoutes: (string | null)[] = [];
    const usedUp = async () => (await routingOf(first)).routes.find((r) => r.id === "sub")!.why_not === "quota_exhausted";
    while (firstRoutes.length < 60 && !(firstRoutes.length > 0 && (await usedUp()))) firstRoutes.push((await ask(first)).route);
    expect(await usedUp(), firstRoutes.join(",")).toBe(true);
    for (let i = 0; i < 3; i++) expect((await ask(first)).route).toBe("paid");
    for (let i = 0; i < 5; i++) expect((await ask(second)).route).toBe("paid");
    const sub = (await routingOf(second)).routes.find((r) => r.id === "sub")!;
    expect(sub.why_not).toBe("quota_exhausted");
    expect((await quota!.stats()).quotaRejected).toBe(0);
  });
});

describe("quota pacing", () => {
  it("a quota that resets in an hour is spread over the hour: its share is what the remaining quota can carry at the model's demand", async () => {
    const [paid, quota] = await providers([{}, { quotaLimit: 2_000 }], "pace");
    const model = unique("pace");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` },
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 2000 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, reset_path: data.reset_at, window_s: 3600 }` },
      ], "envelope_min_samples: 1"),
    );
    await calibrate(model, { samples: [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
    for (let i = 0; i < 20; i++) expect((await ask(model)).status).toBe(200);
    const sub = (await routingOf(model)).routes.find((r) => r.id === "sub")!;
    // Demand is a few requests per second; an hour of it needs ~10^5 tokens, the quota holds 2,000.
    expect(sub.feasible).toBe(true);
    expect(sub.fraction).toBeGreaterThan(0);
    expect(sub.fraction).toBeLessThan(0.05);
    expect((await quota!.stats()).quotaRejected).toBe(0);
  });
});

describe("concurrency slots", () => {
  it("never has more requests in flight at a concurrency route than its limit, across two isolates", async () => {
    const [paid, sub] = await providers([{ ttftMs: 50 }, { ttftMs: 300, concurrencyLimit: 2 }], "slots");
    const model = unique("slots");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.dear}` },
        { id: "sub", provider: sub!, fields: "provider_type: concurrency, concurrency: { limit: 2 }" },
      ], "envelope_min_samples: 1, budget_alpha: 0"),
    );
    await calibrate(model, { samples: [{ route: "paid", ttft_ms: 50, total_ms: 60, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 300, total_ms: 310, prompt_tokens: 6, output_tokens: 8 }] });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => ask(model, {}, i % 2 === 0 ? "A" : "B")));
    expect(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => a.status))).toBe(true);
    const stats = await sub!.stats();
    expect(stats.concurrencyRejected, "the provider never saw more than its limit").toBe(0);
    expect(stats.peakInFlight).toBeLessThanOrEqual(2);
    expect(stats.completed).toBeGreaterThanOrEqual(2); // the free slots were used
    expect(tally(answers.map((a) => a.route)).paid ?? 0).toBeGreaterThanOrEqual(1); // the overflow went to the paid route
  });

  it("as many concurrent requests as free slots are all served, round after round; more than that, the extra get 503 no_free_slot", async () => {
    // The route's only provider takes 300 ms to its first byte, so each round's requests overlap.
    const [sub] = await providers([{ ttftMs: 300, concurrencyLimit: 4 }], "slots4");
    const model = unique("slots4");
    await publish(config(model, [{ id: "sub", provider: sub!, fields: "provider_type: concurrency, concurrency: { limit: 4 }" }], "budget_alpha: 0"));
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 4 }, () => ask(model)));
      expect(answers.map((a) => a.status), `round ${round}: ${answers.map((a) => a.text).join(" | ")}`).toEqual([200, 200, 200, 200]);
    }
    const served = await sub!.stats();
    expect(served.concurrencyRejected, "the provider never saw more than its limit").toBe(0);
    expect(served.peakInFlight).toBeLessThanOrEqual(4);
    expect(served.completed).toBe(12);

    // Six at once for four slots: four served, two refused with the reason, and nothing sent for them.
    const crowd = await Promise.all(Array.from({ length: 6 }, () => ask(model)));
    const statuses = crowd.map((a) => a.status).sort();
    expect(statuses, crowd.map((a) => a.text).join(" | ")).toEqual([200, 200, 200, 200, 503, 503]);
    for (const refused of crowd.filter((a) => a.status === 503)) {
      const error = (JSON.parse(refused.text) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe("no_feasible_route");
      expect(error.message).toBe(`No route of model '${model}' can take this request now: sub (no_free_slot)`);
    }
    const after = await sub!.stats();
    expect(after.completed).toBe(16);
    expect(after.concurrencyRejected).toBe(0);
    expect(after.peakInFlight).toBeLessThanOrEqual(4);
  });
});

describe("clients that hang up before response headers", () => {
  const HUNG_MS = 60_000; // a provider this slow to its first byte: only the client's leaving ends the try

  /** `n` clients at once whose requests reach a provider, then all hang up before any headers. */
  async function hangUps(model: string, n: number, admitted: () => Promise<number>): Promise<void> {
    const clients = Array.from({ length: n }, () => new AbortController());
    const body = JSON.stringify({ model, max_tokens: 8, messages: [{ role: "user", content: "How deep is the sea?" }] });
    const pending = clients.map((c) => routerFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body, signal: c.signal }).catch(() => null));
    await expect.poll(admitted, { timeout: 5_000, interval: 10 }).toBe(n);
    for (const c of clients) c.abort();
    for (const res of await Promise.all(pending)) await res?.body?.cancel().catch(() => {});
  }

  it("a burst of them gives every concurrency slot back: the next requests are served, not refused no_free_slot", async () => {
    const [sub] = await providers([{ ttftMs: HUNG_MS, concurrencyLimit: 3 }], "hangslots");
    const model = unique("hangslots");
    await publish(config(model, [{ id: "sub", provider: sub!, fields: "provider_type: concurrency, concurrency: { limit: 3 }" }], "budget_alpha: 0"));
    for (let round = 0; round < 2; round++) {
      await hangUps(model, 3, async () => (await sub!.stats()).inFlight);
      await expect.poll(async () => (await sub!.stats()).inFlight, { timeout: 2_000, interval: 10, message: "the provider's requests were not cut" }).toBe(0);
    }
    expect((await sub!.stats()).aborted).toBe(6);
    await expect.poll(async () => (await routingOf(model)).routes[0]!.concurrency, { timeout: 2_000, interval: 20 }).toMatchObject({ in_use_here: 0 });

    await sub!.setBehaviour({ ttftMs: 0, concurrencyLimit: 3 });
    const answers = await Promise.all(Array.from({ length: 3 }, () => ask(model)));
    expect(answers.map((a) => a.status), answers.map((a) => a.text).join(" | ")).toEqual([200, 200, 200]);
  });

  it("a burst of them settles every quota reservation and counts no use: the free quota keeps its traffic", async () => {
    // Each request reserves ~14 tokens of a 60-token quota while in flight; four leaked reservations would leave too little for one more.
    const [paid, quota] = await providers([{ ttftMs: HUNG_MS }, { ttftMs: HUNG_MS }], "hangquota");
    const model = unique("hangquota");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` },
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 60 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, window: rolling, window_s: 3600 }` },
      ], "envelope_min_samples: 1"),
    );
    await calibrate(model, { samples: [{ route: "paid", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
    const inFlight = async () => (await paid!.stats()).inFlight + (await quota!.stats()).inFlight;
    await hangUps(model, 4, inFlight);
    await expect.poll(inFlight, { timeout: 2_000, interval: 10, message: "the providers' requests were not cut" }).toBe(0);
    expect((await quota!.stats()).aborted, "the quota route carried some of the burst").toBeGreaterThanOrEqual(1);

    await expect.poll(async () => (await routingOf(model)).routes.find((r) => r.id === "sub")!.quota, { timeout: 2_000, interval: 20 }).toMatchObject({ reserved_here: 0 });
    // The router counted nothing for the hung-up requests: what it says is left is at least what the provider did not bill.
    const billed = (await quota!.stats()).quota.used;
    const left = (await routingOf(model)).routes.find((r) => r.id === "sub")!.quota!.remaining!;
    expect(left).toBeGreaterThanOrEqual(60 - billed);

    await Promise.all([paid!.setBehaviour({}), quota!.setBehaviour({})]);
    const next = await ask(model);
    expect(next.status).toBe(200);
    expect(next.route, "the free quota, not the paid route").toBe("sub");
  });
});

describe("latency hedging", () => {
  it("cuts the tail: a request stuck on a slow first byte is answered by the next route, and both are paid for", { timeout: 40_000 }, async () => {
    // The cheap route is slow to start on 40% of requests (seeded); the dear one never is.
    // Hedged, the slowest answer takes the SLO (200 ms) plus the dear route's 40 ms; the
    // bound below leaves it 1.25 s for a loaded machine and is still under any unhedged slow one.
    const tail: FakeProviderBehaviour = { ttftMs: 5, slowFraction: 0.4, slowTtftMs: 2_000, seed: 7 };
    const [cheapOff, fastOff, cheapOn, fastOn] = await providers([tail, { ttftMs: 40 }, tail, { ttftMs: 40 }], "hedge");
    const run = async (mode: "off" | "slo", cheap: FleetProvider, fast: FleetProvider) => {
      const model = unique(`hedge-${mode}`);
      await publish(
        config(model, [{ id: "cheap", provider: cheap, fields: `provider_type: on_demand, ${PRICE.cheap}` }, { id: "fast", provider: fast, fields: `provider_type: on_demand, ${PRICE.dear}` }], `budget_alpha: 0, envelope_min_samples: 1, latency_hedge_mode: ${mode}, latency_slo_ms: 200`),
      );
      await calibrate(model, { samples: [{ route: "cheap", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "fast", ttft_ms: 40, total_ms: 50, prompt_tokens: 6, output_tokens: 8 }] });
      const answers = [];
      for (let i = 0; i < 10; i++) answers.push(await ask(model, { stream: true, stream_options: { include_usage: true } }));
      return { model, answers };
    };
    const off = await run("off", cheapOff!, fastOff!);
    const on = await run("slo", cheapOn!, fastOn!);
    const slowest = (a: { ms: number }[]) => Math.max(...a.map((x) => x.ms));
    // Same seed, same draws: without hedging some requests wait the full 2 s.
    expect((await cheapOff!.stats()).slow).toBeGreaterThan(0);
    expect(slowest(off.answers)).toBeGreaterThanOrEqual(1_900);
    expect(slowest(on.answers)).toBeLessThan(1_500);
    expect(on.answers.every((a) => a.status === 200 && a.text.includes("[DONE]"))).toBe(true);
    expect(on.answers.filter((a) => a.hedge === "fired").length).toBeGreaterThan(0);

    const text = await metricsText();
    expect(metricValue(text, "switchyard_routewise_hedges_total", { model: on.model, event: "fired" })).toBeGreaterThan(0);
    expect(metricValue(text, "switchyard_routewise_hedges_total", { model: on.model, event: "won_by_hedge" })).toBeGreaterThan(0);
    expect(metricValue(text, "switchyard_routewise_hedges_total", { model: off.model })).toBe(0);
    // The slow leg was cut, and still paid for alongside the hedge that won.
    await expect.poll(async () => (await cheapOn!.stats()).aborted, { timeout: 5_000 }).toBeGreaterThan(0);
    const spendOn = await metricsText();
    expect(metricValue(spendOn, "switchyard_routewise_spend_total", { model: on.model, route: "cheap" })).toBeGreaterThan(0);
    expect(metricValue(spendOn, "switchyard_routewise_spend_total", { model: on.model, route: "fast" })).toBeGreaterThan(0);
  });
});

describe("route circuits across isolates", () => {
  // B sees the cheap route fail (its provider is gone) until the route's circuit opens;
  // the circuit lives in the model's envelope object, so A, which never saw a failure,
  // stops choosing the route once its view is refreshed (GET /routing flushes it).
  it("failures seen by one isolate take the route out of another isolate's decisions", async () => {
    const [cheap, dear] = await providers([{}, {}], "rcirc");
    const model = unique("rcirc");
    await publish(config(model, [{ id: "cheap", provider: cheap!, fields: `provider_type: on_demand, ${PRICE.cheap}` }, { id: "dear", provider: dear!, fields: `provider_type: on_demand, ${PRICE.dear}` }], "budget_alpha: 0, envelope_min_samples: 3"));
    await calibrate(model);
    expect(await ask(model)).toMatchObject({ status: 200, route: "cheap" }); // alpha 0: the cheap route is the first choice
    await cheap!.close();

    // B: every request tries "cheap" first, fails to connect, and is served by "dear",
    // until 5 failures in a row (the route circuit's consecutive_failures) open it.
    const attemptsInB: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await env.ROUTER_B.fetch(new Request("https://router.test/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }) }));
      await res.arrayBuffer();
      expect({ status: res.status, route: res.headers.get("x-switchyard-route") }).toEqual({ status: 200, route: "dear" });
      attemptsInB.push(res.headers.get("x-switchyard-attempts")!);
    }
    expect(attemptsInB).toEqual(["2", "2", "2", "2", "2", "1", "1", "1"]); // open in B at once
    const envelope = env.ROUTE_ENVELOPE.getByName(envelopeObjectName(model));
    await expect.poll(async () => (await envelope.snapshot()).circuits.cheap?.phase, { timeout: 5_000 }).toBe("open");

    await routingOf(model); // A exchanges with the envelope object now (as it would within ROUTEWISE_SYNC_MS)
    for (let i = 0; i < 5; i++) {
      const res = await post("/v1/chat/completions", { model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
      await res.arrayBuffer();
      expect({ status: res.status, route: res.headers.get("x-switchyard-route"), attempts: res.headers.get("x-switchyard-attempts") }).toEqual({ status: 200, route: "dear", attempts: "1" });
    }
    const routes = (await routingOf(model)).routes;
    expect(routes.find((r) => r.id === "cheap")).toMatchObject({ feasible: false, why_not: "unhealthy" });
  }, 20_000);
});

describe("every route's circuit open", () => {
  it("is a 503 no_feasible_route whose Retry-After says when the first route may take its probe", async () => {
    const [only] = await providers([{}], "allopen");
    const model = unique("allopen");
    await publish(config(model, [{ id: "only", provider: only!, fields: `provider_type: on_demand, ${PRICE.cheap}` }], "budget_alpha: 0"));
    await only!.close();
    // Five failed connections in a row open the route's circuit (its consecutive_failures).
    for (let i = 0; i < 5; i++) expect((await ask(model)).status).toBe(502);
    const res = await post("/v1/chat/completions", { model, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "no_feasible_route", message: expect.stringContaining("only (unhealthy)") });
    const wait = Number(res.headers.get("retry-after"));
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
  });
});

describe("what operators see", () => {
  it("/routing shows per route fraction, expected cost, quota, slots and envelope percentiles; /metrics spend and tokens", async () => {
    const [paid, quota, sub] = await providers([{ ttftMs: 10 }, { quotaLimit: 100_000, ttftMs: 10 }, { ttftMs: 10, concurrencyLimit: 3 }], "view");
    const model = unique("view");
    await publish(
      config(model, [
        { id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` },
        { id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 100000 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, reset_path: data.reset_at, window_s: 3600 }` },
        { id: "slots", provider: sub!, fields: "provider_type: concurrency, concurrency: { limit: 3 }" },
      ], "envelope_min_samples: 2, envelope_percentiles: [50, 99]"),
    );
    const seeded = await calibrate(model, { probes: 2, max_tokens: 4 });
    expect(seeded.samples).toEqual({ paid: 2, sub: 2, slots: 2 });
    for (let i = 0; i < 4; i++) expect((await ask(model)).status).toBe(200);

    const view = await routingOf(model);
    expect(view.router).toBe("routewise");
    expect(view.calibrated).toBe(true);
    expect(view.routes.reduce((s, r) => s + r.fraction, 0)).toBeCloseTo(1, 6);
    const byId = Object.fromEntries(view.routes.map((r) => [r.id, r]));
    expect(byId.paid!.expected_cost).toBeGreaterThan(0);
    expect(byId.sub!.expected_cost).toBe(0);
    expect(byId.sub!.quota!.remaining).toBeGreaterThan(0);
    expect(byId.sub!.quota!.remaining).toBeLessThan(100_000);
    expect(byId.slots!.concurrency!.limit).toBe(3);
    expect(Object.keys(byId.paid!.envelope!.ttft_ms)).toEqual(["p50", "p99"]);
    expect(byId.paid!.envelope!.samples).toBeGreaterThanOrEqual(2);

    const text = await metricsText();
    expect(metricValue(text, "switchyard_routewise_tokens_total", { model, kind: "output" })).toBeGreaterThan(0);
    expect(metricValue(text, "switchyard_routewise_requests_total", { model, status: "200" })).toBe(4);

    // The envelope object is evicted once traffic stops: its counters are stored, not lost with it.
    const counted = ["switchyard_routewise_spend_total", "switchyard_routewise_tokens_total", "switchyard_routewise_requests_total"].map((name) => [name, metricValue(text, name, { model })] as const);
    expect(counted[0]![1]).toBeGreaterThan(0);
    await evictDurableObject(env.ROUTE_ENVELOPE.getByName(envelopeObjectName(model)));
    const after = await metricsText();
    for (const [name, value] of counted) expect(metricValue(after, name, { model }), name).toBeCloseTo(value, 12);
  });
});

describe("bad input", () => {
  it("calibration needs the admin token, a known model and a well-formed body", async () => {
    const [paid] = await providers([{}], "badcal");
    const model = unique("badcal");
    await publish(config(model, [{ id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` }], "envelope_min_samples: 1"));
    expect((await post(`/admin/routewise/${model}/calibrate`, { probes: 1 })).status).toBe(401);
    const wrongMethod = await routerFetch(`/admin/routewise/${model}/calibrate`, { headers: admin });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
    const noAction = await post(`/admin/routewise/${model}`, { probes: 1 }, admin);
    expect(noAction.status).toBe(404);
    expect((await openAIErrorOf(noAction)).code).toBe("not_found");
    const notJson = await post(`/admin/routewise/${model}/calibrate`, "{probes", admin);
    expect(notJson.status).toBe(400);
    expect((await openAIErrorOf(notJson)).code).toBe("invalid_json");
    const unknown = await post(`/admin/routewise/nope/calibrate`, { probes: 1 }, admin);
    expect(unknown.status).toBe(404);
    expect((await openAIErrorOf(unknown)).code).toBe("model_not_found");
    for (const [body, code] of [
      [{ probes: 0 }, "invalid_calibration"],
      [{ probes: 1, routes: ["ghost"] }, "unknown_route"],
      [{ samples: [{ route: "ghost", ttft_ms: 1, total_ms: 2, prompt_tokens: 1, output_tokens: 1 }] }, "invalid_samples"],
      [{ samples: [{ route: "paid", ttft_ms: 9, total_ms: 2, prompt_tokens: 1, output_tokens: 1 }] }, "invalid_samples"],
    ] as const) {
      const res = await post(`/admin/routewise/${model}/calibrate`, body, admin);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await openAIErrorOf(res)).code).toBe(code);
    }
    expect((await paid!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);
  });

  it("a provider's 4xx answer is passed on, costs nothing and holds no quota", async () => {
    const [quota] = await providers([{ quotaLimit: 1_000 }], "fourxx");
    const model = unique("fourxx");
    await publish(config(model, [{ id: "sub", provider: quota!, fields: `provider_type: quota, quota: { limit: 1000 }, quota_source: { url: "${quota!.url}/usage", used_path: data.used, window: rolling, window_s: 3600 }` }], "envelope_min_samples: 1"));
    await calibrate(model, { samples: [{ route: "sub", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }] });
    // The fake provider refuses an empty messages array, as OpenAI does (the router leaves messages to the provider);
    // the request still holds its predicted output (8 tokens) of the quota while in flight.
    const res = await post("/v1/chat/completions", { model, messages: [] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("messages must be a non-empty array"); // the provider's own answer, passed on
    const text = await metricsText();
    expect(metricValue(text, "switchyard_routewise_requests_total", { model, status: "400" })).toBe(1);
    expect(metricValue(text, "switchyard_routewise_spend_total", { model })).toBe(0);
    const sub = (await routingOf(model)).routes[0]!;
    expect(sub.quota!.remaining).toBe(1_000);
  });

  it("an answer without a body is served and counted as the winner's", async () => {
    const server = await spawnServer({ reply: { status: 204, raw: "" } }, "nobody");
    try {
      const model = unique("nobody");
      const route = { id: "empty", provider: { url: server.url } as FleetProvider, fields: `provider_type: on_demand, ${PRICE.cheap}` };
      await publish(config(model, [route], "envelope_min_samples: 1"));
      const res = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(204);
      expect(res.headers.get("x-switchyard-route")).toBe("empty");
      expect(metricValue(await metricsText(), "switchyard_routewise_requests_total", { model, route: "empty", status: "204" })).toBe(1);
      expect((await routingOf(model)).routes[0]!.envelope!.samples).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("a calibration probe takes the route's concurrency slot: with the one slot in use, it is refused, not sent", async () => {
    const server = await spawnServer({ latencyMs: 1_500 }, "probe-slot");
    try {
      const model = unique("probeslot");
      await publish(config(model, [{ id: "slots", provider: { url: server.url } as FleetProvider, fields: "provider_type: concurrency, concurrency: { limit: 1 }" }], "envelope_min_samples: 1"));
      const pending = post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });
      await expect.poll(async () => (await server.stats()).inFlight, { timeout: 5_000, interval: 10 }).toBe(1);
      const probed = await calibrate(model, { probes: 1, max_tokens: 4 });
      expect(probed.failures).toEqual({ slots: "every concurrency slot of the route is busy" });
      expect((await server.stats()).byPath["/v1/chat/completions"]).toBe(1); // the probe was never sent
      const answered = await pending;
      expect(answered.status).toBe(200);
      await answered.text(); // the slot is held until the answer's body has been read
      // The request's slot is free again: the next probe goes out.
      const again = await calibrate(model, { probes: 1, max_tokens: 4 });
      expect(again.failures, JSON.stringify(again)).toEqual({});
    } finally {
      await server.close();
    }
  });

  it("a RouteWise model refuses the KServe surface with a KServe error", async () => {
    const [paid] = await providers([{}], "kserve");
    const model = unique("kserve");
    await publish(config(model, [{ id: "paid", provider: paid!, fields: `provider_type: on_demand, ${PRICE.cheap}` }], "envelope_min_samples: 1"));
    const res = await post(`/v2/models/${model}/infer`, { inputs: [] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain("RouteWise");
  });
});
