/**
 * Durable Object names are unambiguous, and a quota object keeps the newest config's terms:
 * two ids never share an object by accident, and specs from two config versions never
 * make the limit flip or the usage API be polled on every call.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { banditObjectName, quotaObjectName, slotsObjectName } from "../../src/app/state/object-names";
import { loadConfig } from "../../src/core/config/load";
import { buildRouteWiseSpecs } from "../../src/core/routewise/spec";
import type { QuotaSpec } from "../../src/core/routewise/wire";
import { providersClosedAfterEach } from "../support/fleet";

const providers = providersClosedAfterEach();

describe("object names", () => {
  const source = { url: "https://usage.example.com/v1/usage", used_path: "data.used", window_s: 3600 };
  const route = (id: string, limit: number) => ({ id, provider_type: "quota", url: "https://q.example.com/v1", quota: { limit }, quota_source: source });
  const slots = (id: string, limit: number) => ({ id, provider_type: "concurrency", url: "https://c.example.com/v1", concurrency: { limit } });

  it("a route's own quota and slots: model a/b route c and model a route b/c are two objects", () => {
    const text = JSON.stringify({
      models: {
        "a/b": { router: "routewise", routes: [route("c", 1_000), slots("s/t", 1)] },
        a: { router: "routewise", routes: [route("b/c", 999_999), slots("b/s/t", 5)] },
        "a/b/s": { router: "routewise", routes: [slots("t", 9)] },
      },
    });
    const result = loadConfig(text, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    const specs = buildRouteWiseSpecs(result.config, "v1");
    const one = specs.get("a/b")!.quotas.get("c")!;
    const other = specs.get("a")!.quotas.get("b/c")!;
    expect(quotaObjectName(one.id)).not.toBe(quotaObjectName(other.id));
    const slotIds = [specs.get("a/b")!.slots.get("s/t")!.id, specs.get("a")!.slots.get("b/s/t")!.id, specs.get("a/b/s")!.slots.get("t")!.id];
    expect(new Set(slotIds.map(slotsObjectName)).size).toBe(3);
  });

  it("a bandit router node: graph a/b node c and graph a node b/c are two objects", () => {
    expect(banditObjectName("a/b", "c")).not.toBe(banditObjectName("a", "b/c"));
    expect(banditObjectName("g", "root")).toBe("bandit:g/root"); // plain names keep the objects they always had
  });
});

describe("a quota object told two configs' terms", () => {
  const spec = (url: string, version: string, limit: number, path: string): QuotaSpec => ({
    id: "q",
    version,
    limit,
    unit: "tokens",
    source: { url: `${url}${path}`, auth: undefined, used_path: "data.used", window: "fixed", window_s: 3_600, poll_s: 60, timeout_ms: 5_000, stale_after_s: 300 },
  });

  it("keeps the newer version's limit, and polls once per version however often the older one comes back", async () => {
    const [provider] = await providers([{ quotaLimit: 10_000_000 }], "qver");
    const quota = env.PROVIDER_QUOTA.getByName(quotaObjectName(`versions-${crypto.randomUUID()}`));
    const older = spec(provider!.url, "20260101T000000000Z-aaaaaaaaaaaa", 1_000, "/usage");
    const newer = spec(provider!.url, "20260102T000000000Z-bbbbbbbbbbbb", 999_999, "/v1/usage");
    expect((await quota.sync({ isolate: "old", spec: older, batches: [] })).limit).toBe(1_000);
    const limits: number[] = [];
    for (let i = 0; i < 16; i++) limits.push((await quota.sync({ isolate: i % 2 === 0 ? "new" : "old", spec: i % 2 === 0 ? newer : older, batches: [] })).limit);
    expect(limits).toEqual(Array(16).fill(999_999));
    expect((await quota.adopt(older)).limit).toBe(999_999);
    const polls = (await provider!.stats()).byPath;
    // One poll when the older terms came, one when the newer did; poll_s (60 s) paces the rest.
    expect((polls["/usage"] ?? 0) + (polls["/v1/usage"] ?? 0)).toBe(2);
  });
});
