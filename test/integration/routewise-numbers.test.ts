/**
 * Bad numbers from everyone RouteWise listens to, through the whole router in workerd:
 * a client's max_tokens, a provider's usage, an operator's calibration samples, a usage
 * API's reset time, and rows already in the objects' storage. Each is refused (a 4xx
 * naming the field) or set aside and counted; none may make a request or /routing fail.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { envelopeObjectName, quotaObjectName } from "../../src/app/state/object-names";
import { providersClosedAfterEach, spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, openAIErrorOf, post, publish, routerFetch } from "../support/router";
import { metricsText, metricValue } from "../support/state";

const providers = providersClosedAfterEach();
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const PRICED = "provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 }";
const GOOD_SAMPLE = { ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 };

function model(name: string, routes: string[], params = "envelope_min_samples: 1"): string {
  return `models:\n  ${name}:\n    router: routewise\n    router_params: { ${params} }\n    routes:\n${routes.map((r) => `      - { ${r} }`).join("\n")}\n`;
}

const ask = (name: string, extra: Record<string, unknown> = {}) => post("/v1/chat/completions", { model: name, messages: [{ role: "user", content: "How deep is the sea?" }], ...extra });

/** /routing's view of a model; the test fails on any status but 200. */
async function routingOf(name: string) {
  const res = await routerFetch("/routing", { headers: admin });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return (JSON.parse(text) as { models: Record<string, any> }).models[name]!;
}

/** Every number in a JSON value is finite (JSON has no NaN or Infinity: they would have been written as null). */
const noNulledNumbers = (view: unknown) => !JSON.stringify(view).includes('"expected_cost":null') && !JSON.stringify(view).includes('"fraction":null');

describe("a client's max_tokens", () => {
  it("must be a whole number from 1 to 1,000,000: anything else is 400 naming the field, before and after a provider's bad usage", async () => {
    const server = await spawnServer({ reply: { body: { id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "hi" } }], usage: { prompt_tokens: 5, completion_tokens: 1e308 } } } }, "maxtok");
    try {
      const name = unique("maxtok");
      await publish(model(name, [`id: paid, url: "${server.url}", ${PRICED}`], "envelope_min_samples: 1, output_predictor: { mode: max_tokens }"));
      const refuse = async () => {
        for (const [field, value] of [["max_tokens", 1e308], ["max_tokens", -1], ["max_tokens", "lots"], ["max_tokens", 0], ["max_tokens", 1.5], ["max_tokens", 1_000_001], ["max_completion_tokens", 1e308]] as const) {
          const res = await ask(name, { [field]: value });
          expect(res.status, `${field}: ${value}`).toBe(400);
          expect(await openAIErrorOf(res)).toEqual({ message: `'${field}' must be a whole number from 1 to 1000000`, type: "invalid_request_error", param: field, code: "invalid_max_tokens" });
        }
      };
      await refuse();
      expect((await server.stats()).byPath["/v1/chat/completions"] ?? 0, "refused before the provider").toBe(0);
      for (let i = 0; i < 2; i++) expect((await ask(name, { max_tokens: 1_000_000 })).status).toBe(200);
      await refuse();
      expect((await ask(name, { max_tokens: 8 })).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe("a provider's usage", () => {
  it("reporting completion_tokens 1e308 is set aside and counted: /routing and the next requests still work", async () => {
    const server = await spawnServer({ reply: { body: { id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "sixteen chars.." } }], usage: { prompt_tokens: 5, completion_tokens: 1e308 } } } }, "usage");
    const [good] = await providers([{}], "usage-good");
    try {
      const name = unique("usage");
      await publish(model(name, [`id: broken, url: "${server.url}", provider_type: on_demand, pricing: { input: 0.0000001, output: 0.0000002 }`, `id: good, url: "${good!.url}", ${PRICED}`], "envelope_min_samples: 1, budget_alpha: 0"));
      for (let i = 0; i < 2; i++) {
        const res = await ask(name);
        expect(res.status).toBe(200);
        expect(res.headers.get("x-switchyard-route")).toBe("broken");
        await res.text();
      }
      const view = await routingOf(name);
      expect(noNulledNumbers(view), JSON.stringify(view.routes)).toBe(true);
      const broken = view.routes.find((r: { id: string }) => r.id === "broken");
      expect(broken.feasible).toBe(true);
      expect(broken.envelope.output_tokens.p50, "estimated from the answer's text, not 1e308").toBeLessThan(100);
      for (let i = 0; i < 3; i++) expect((await ask(name)).status).toBe(200);
      await expect.poll(async () => metricValue(await metricsText(), "switchyard_routewise_discarded_total", { model: name, route: "broken", what: "usage" }), { timeout: 5_000 }).toBe(5);
      expect(metricValue(await metricsText(), "switchyard_routewise_tokens_total", { model: name, route: "broken", kind: "output" })).toBeLessThan(100);
    } finally {
      await server.close();
    }
  });
});

describe("what the envelope object has stored", () => {
  it("a stored sample with a broken number or a time in the future is left out when the object starts, and counted", async () => {
    const [paid] = await providers([{}], "stored");
    const name = unique("stored");
    await publish(model(name, [`id: paid, url: "${paid!.url}", ${PRICED}`]));
    const stub = env.ROUTE_ENVELOPE.getByName(envelopeObjectName(name));
    const now = Date.now();
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS samples (route TEXT NOT NULL, at INTEGER NOT NULL, ttft REAL NOT NULL, total REAL NOT NULL, prompt INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL)");
      sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", "paid", now, 5, 10, 6, 8, 0); // the one good row
      sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", "paid", now, 5, 10, 6, 1e308, 0);
      sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", "paid", now, 1e300, 1e308, 1e308, 8, 0);
      sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", "paid", now, 5, Infinity, 6, 8, 0);
      sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", "paid", now + 86_400_000, 5, 10, 6, 8, 0); // a day ahead: it would never age out
    });
    await evictDurableObject(stub);
    // The restarted object learns the model's routes from an isolate's next exchange: one now.
    await stub.sync({ isolate: "test", settings: { percentiles: [50, 95], windowMs: 3_600_000, latencyWindowMs: 300_000, routes: ["paid"] }, batches: [] });
    const view = await routingOf(name);
    expect(view.routes[0].envelope.samples).toBe(1);
    expect(noNulledNumbers(view)).toBe(true);
    expect((await ask(name, { max_tokens: 8 })).status).toBe(200);
    expect(metricValue(await metricsText(), "switchyard_routewise_discarded_total", { model: name, route: "paid", what: "sample" })).toBe(4);
  });
});

describe("calibration samples", () => {
  it("a field out of its bounds is 400 naming the field, and nothing is seeded", async () => {
    const [paid] = await providers([{}], "cal");
    const name = unique("cal");
    await publish(model(name, [`id: paid, url: "${paid!.url}", ${PRICED}`]));
    const cases: [Record<string, unknown>, string, string][] = [
      [{ output_tokens: 1e308 }, "samples[1].output_tokens", "must be a number from 0 to 10000000"],
      [{ prompt_tokens: -1 }, "samples[1].prompt_tokens", "must be a number from 0 to 10000000"],
      [{ ttft_ms: 0 }, "samples[1].ttft_ms", "must be a number from 1 to 3600000"],
      [{ ttft_ms: 1e300, total_ms: 1e300 }, "samples[1].ttft_ms", "must be a number from 1 to 3600000"],
      [{ total_ms: 1e308 }, "samples[1].total_ms", "must be a number from 1 to 3600000"],
      [{ cached_tokens: 7 }, "samples[1].cached_tokens", "must be <= prompt_tokens"],
      [{ at: Date.now() + 3_600_000 }, "samples[1].at", "is in the future (more than 60 s ahead of the router's clock)"],
      [{ at: "2999-01-01T00:00:00Z" }, "samples[1].at", "is in the future (more than 60 s ahead of the router's clock)"],
      [{ at: "soon" }, "samples[1].at", "must be epoch ms or an ISO time"],
      // Past the envelope's window the envelope would drop it unseen, while the answer counted it seeded.
      [{ at: Date.now() - 2 * 3_600_000 }, "samples[1].at", "is older than the envelope's window (envelope_window_s 3600), so it would count for nothing"],
      [{ at: Math.floor(Date.now() / 1000) }, "samples[1].at", "is older than the envelope's window (envelope_window_s 3600), so it would count for nothing (it reads as epoch seconds; send epoch ms)"],
    ];
    for (const [fields, param, message] of cases) {
      const res = await post(`/admin/routewise/${name}/calibrate`, { samples: [{ route: "paid", ...GOOD_SAMPLE }, { route: "paid", ...GOOD_SAMPLE, ...fields }] }, admin);
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(await openAIErrorOf(res), JSON.stringify(fields)).toEqual({ message: `${param} ${message}`, type: "invalid_request_error", param, code: "invalid_samples" });
    }
    const probes = await post(`/admin/routewise/${name}/calibrate`, { probes: 1, max_tokens: 1e308 }, admin);
    expect(probes.status).toBe(400);
    expect(await openAIErrorOf(probes)).toMatchObject({ param: "max_tokens", code: "invalid_calibration" });
    expect((await env.ROUTE_ENVELOPE.getByName(envelopeObjectName(name)).snapshot()).envelopes.paid ?? null).toBeNull();
    expect((await paid!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);
  });
});

describe("a usage API's reset time", () => {
  const quotaRoute = (url: string) => `id: sub, url: "${url}", provider_type: quota, quota: { limit: 1000 }, quota_source: { url: "${url}/usage", used_path: data.used, limit_path: data.limit, reset_path: data.reset_at, window_s: 3600 }`;

  it("out of range (1e17) or already past (with the quota used up) is a failed poll: the quota fails safe, /routing still answers", async () => {
    for (const [label, resetAt, lastError] of [
      ["1e17", 1e17, "is more than one window (window_s 3600) ahead"],
      ["past", Math.floor(Date.now() / 1000) - 60, "has passed: the answer is stale"],
    ] as const) {
      const [paid, sub] = await providers([{}, { quotaLimit: 1_000, usageResetAt: resetAt }], `reset-${label}`);
      await sub!.setUsed(1_000);
      const name = unique(`reset-${label}`);
      await publish(model(name, [`id: paid, url: "${paid!.url}", ${PRICED}`, quotaRoute(sub!.url)]));
      await post(`/admin/routewise/${name}/calibrate`, { samples: [{ route: "paid", ...GOOD_SAMPLE }, { route: "sub", ...GOOD_SAMPLE }] }, admin);
      for (let i = 0; i < 3; i++) {
        const res = await ask(name, { max_tokens: 8 });
        expect(res.status, label).toBe(200);
        expect(res.headers.get("x-switchyard-route"), label).toBe("paid");
      }
      const view = await routingOf(name);
      const route = view.routes.find((r: { id: string }) => r.id === "sub");
      expect(route.why_not, label).toBe("quota_fail_safe");
      expect(route.quota, label).toMatchObject({ fail_safe: "never_polled", reset_at: null });
      expect(route.quota.last_error, label).toContain(lastError);
      expect((await sub!.stats()).byPath["/v1/chat/completions"] ?? 0, `${label}: nothing sent on a quota that is unknown`).toBe(0);
    }
  });

  it("a stored poll that cannot be believed (a reset at 1e17, counts that are not numbers) is dropped when the object starts", async () => {
    const [paid, sub] = await providers([{}, { quotaLimit: 1_000, usageDown: true }], "qstored");
    const name = unique("qstored");
    await publish(model(name, [`id: paid, url: "${paid!.url}", ${PRICED}`, quotaRoute(sub!.url)]));
    await post(`/admin/routewise/${name}/calibrate`, { samples: [{ route: "paid", ...GOOD_SAMPLE }, { route: "sub", ...GOOD_SAMPLE }] }, admin);
    const stub = env.PROVIDER_QUOTA.getByName(quotaObjectName(`${name}/sub`));
    await expect.poll(async () => (await stub.snapshot()).lastError, { timeout: 5_000 }).toContain("503"); // it has polled (and failed) once
    const stored: { polled: Record<string, number | null>; since?: Record<string, number | null> }[] = [
      { polled: { used: 0, limit: 1_000, resetAt: 1e17, at: Date.now() } },
      { polled: { used: NaN, limit: 1e308, resetAt: null, at: Date.now() } },
      { polled: { used: 0, limit: 1_000, resetAt: null, at: Date.now() + 86_400_000 } }, // a poll from tomorrow would never go stale
      { since: { units: NaN, window: null }, polled: { used: 0, limit: 1_000, resetAt: Date.now() + 60_000, at: Date.now() } },
    ];
    for (const written of stored) {
      await runInDurableObject(stub, async (_instance, state) => {
        await state.storage.delete(["polled", "since"]);
        await state.storage.put(written);
      });
      await evictDurableObject(stub);
      const view = await routingOf(name);
      const route = view.routes.find((r: { id: string }) => r.id === "sub");
      const label = JSON.stringify(written);
      if (written.since) {
        // The poll is good; only the count is not: it is dropped and the poll's own remaining stands.
        expect(route.quota.remaining, label).toBe(1_000);
      } else {
        expect(route.why_not, label).toBe("quota_fail_safe");
        expect(route.quota.fail_safe, label).toBe("never_polled");
      }
      expect(noNulledNumbers(view), label).toBe(true);
      expect((await ask(name, { max_tokens: 8 })).status, label).toBe(200);
    }
  });

  it("an answer far larger than a usage report (1 MiB) is not read: a failed poll, and the quota fails safe", async () => {
    const [paid, sub] = await providers([{}, { quotaLimit: 1_000, usagePadBytes: 1_048_576 }], "qhuge");
    const name = unique("qhuge");
    await publish(model(name, [`id: paid, url: "${paid!.url}", ${PRICED}`, quotaRoute(sub!.url)]));
    await post(`/admin/routewise/${name}/calibrate`, { samples: [{ route: "paid", ...GOOD_SAMPLE }, { route: "sub", ...GOOD_SAMPLE }] }, admin);
    expect((await ask(name, { max_tokens: 8 })).headers.get("x-switchyard-route")).toBe("paid");
    const route = (await routingOf(name)).routes.find((r: { id: string }) => r.id === "sub");
    expect(route.why_not).toBe("quota_fail_safe");
    expect(route.quota.last_error).toBe("usage API answer is over 65536 bytes");
    // The same API answering a report of ordinary size is believed: the bound is what refused it.
    await sub!.setBehaviour({ quotaLimit: 1_000 });
    await runDurableObjectAlarm(env.PROVIDER_QUOTA.getByName(quotaObjectName(`${name}/sub`)));
    expect((await routingOf(name)).routes.find((r: { id: string }) => r.id === "sub").quota.fail_safe).toBeNull();
  });
});
