/**
 * `GET /routing` shows operational internals (prices, budgets, quotas, the usage API's
 * URL, last errors, slot grants, replica URLs and state) to the admin token only. Without
 * it there is nothing, unless the operator turns on `routing.public_view`: then models
 * and their shares, and nothing else. Every upstream here is public, the case where the
 * view used to be open by default.
 */
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, openAIErrorOf, publish, routerFetch } from "../support/router";

function config(routing = ""): string {
  const source = `quota_source: { url: "https://usage.example.com/v1/usage", used_path: "data.used", window_s: 3600, timeout_ms: 500 }`;
  return [
    "models:",
    "  m: { pool: p }",
    "  rw:",
    "    router: routewise",
    "    routes:",
    '      - { id: od, url: "https://od.example.com/v1", provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 } }',
    `      - { id: q, url: "https://q.example.com/v1", provider_type: quota, quota: { limit: 1000 }, ${source} }`,
    '      - { id: c, url: "https://c.example.com/v1", provider_type: concurrency, concurrency: { limit: 2 } }',
    "pools:",
    "  p:",
    "    replicas:",
    '      - { id: a, url: "https://a.example.com/v1", weight: 3, labels: [gpu] }',
    '      - { id: b, url: "https://b.example.com/v1", weight: 1 }',
    routing,
  ].join("\n");
}

const get = (token?: string) => routerFetch("/routing", token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });

/** Words of the operational view; none may appear in what a caller without the admin token reads. */
const INTERNALS = ["pricing", "budget", "quota", "usage", "example.com", "http", "last_error", "concurrency", "granted", "grants", "circuit", "envelope", "fail_safe", "remaining", "api_key", "labels", "weight", "version", "rejected", "queued_here", "state"];

describe("GET /routing", () => {
  it("needs the admin token by default, even when every upstream is public", async () => {
    await publish(config());
    const res = await get();
    expect(res.status).toBe(401);
    const text = JSON.stringify(await openAIErrorOf(res));
    for (const word of ["pricing", "example.com", "budget"]) expect(text).not.toContain(word);
    expect((await get(ADMIN_TOKEN)).status).toBe(200);
  });

  it("with public_view: models and shares only, without the token; everything with it", async () => {
    await publish(config("routing: { public_view: true }\n"));
    const res = await get();
    expect(res.status).toBe(200);
    const open = (await res.json()) as { models: Record<string, { shares: Record<string, number> }> };
    expect(Object.keys(open)).toEqual(["models"]);
    expect(Object.keys(open.models).sort()).toEqual(["m", "rw"]);
    for (const model of Object.values(open.models)) expect(Object.keys(model)).toEqual(["shares"]);
    expect(open.models.m!.shares).toEqual({ a: 0.75, b: 0.25 });
    expect(Object.keys(open.models.rw!.shares).sort()).toEqual(["c", "od", "q"]);
    for (const share of Object.values(open.models.rw!.shares)) expect(share).toBeGreaterThanOrEqual(0);
    const text = JSON.stringify(open);
    for (const word of INTERNALS) expect(text, word).not.toContain(word);

    const full = await get(ADMIN_TOKEN);
    expect(full.status).toBe(200);
    const view = (await full.json()) as { config: { version: string }; models: Record<string, Record<string, unknown>> };
    expect(view.config.version).toEqual(expect.any(String));
    const routes = view.models.rw!.routes as { id: string; pricing: unknown; quota: { usage_api: string; last_error: unknown } | null; concurrency: { granted: unknown } | null }[];
    expect(view.models.rw!.budget).toMatchObject({ limit: expect.any(Number) });
    expect(routes.find((r) => r.id === "od")!.pricing).toEqual({ input: 0.000001, output: 0.000002 });
    expect(routes.find((r) => r.id === "q")!.quota).toMatchObject({ usage_api: "https://usage.example.com/v1/usage" });
    expect(routes.find((r) => r.id === "q")!.quota).toHaveProperty("last_error");
    expect(routes.find((r) => r.id === "c")!.concurrency).toHaveProperty("granted");
    expect((view.models.m!.replicas as { url: string }[]).map((r) => r.url)).toEqual(["https://a.example.com/v1", "https://b.example.com/v1"]);
  });

  it("with public_view and client keys: a client key reads the public view, the admin token the whole one", async () => {
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("sk-client")))].map((b) => b.toString(16).padStart(2, "0")).join("");
    await publish(config(`routing: { public_view: true }\nauth: { client_keys: ["sha256:${digest}"] }\n`));
    expect((await get()).status).toBe(401);
    const client = (await (await get("sk-client")).json()) as Record<string, unknown>;
    expect(Object.keys(client)).toEqual(["models"]);
    const admin = await get(ADMIN_TOKEN);
    expect(admin.status).toBe(200);
    expect(Object.keys((await admin.json()) as Record<string, unknown>)).toContain("config");
  });
});
