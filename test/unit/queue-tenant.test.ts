import { describe, expect, it } from "vitest";
import { ANONYMOUS_TENANT, queueTenant } from "../../src/app/model-call/queue-tenant";
import { choose } from "../../src/core/pool/choose";
import type { PoolSpec } from "../../src/core/pool/wire";
import { DEFAULT_SETTINGS } from "../../src/core/picking/scoring/settings";
import { DEFAULT_CIRCUIT_POLICY } from "../../src/core/health/circuit";

const request = (headers: Record<string, string> = {}) => new Request("https://router.test/v1/chat/completions", { method: "POST", headers });

describe("queueTenant", () => {
  it("is the client key (its digest, never the key) when keys are configured", async () => {
    const a = await queueTenant(request(), "sk-client-a", true);
    expect(a).toMatch(/^key:[0-9a-f]{64}$/);
    expect(a).not.toContain("sk-client-a");
    expect(await queueTenant(request({ "cf-connecting-ip": "192.0.2.1" }), "sk-client-a", true)).toBe(a);
    expect(await queueTenant(request(), "sk-client-b", true)).not.toBe(a);
  });

  it("without keys is the client address, whatever bearer is sent, else one anonymous tenant", async () => {
    const ip = request({ "cf-connecting-ip": "192.0.2.1" });
    expect(await queueTenant(ip, "sk-made-up-1", false)).toBe("ip:192.0.2.1");
    expect(await queueTenant(ip, "sk-made-up-2", false)).toBe("ip:192.0.2.1");
    expect(await queueTenant(request({ "x-real-ip": "192.0.2.9" }), "sk-made-up-3", false)).toBe(ANONYMOUS_TENANT); // only Cloudflare's header counts
    expect(await queueTenant(request(), undefined, false)).toBe(ANONYMOUS_TENANT);
  });
});

describe("an operator's pin (forced replica)", () => {
  const spec = {
    pool: "p", version: "v1", policy: "weighted", scoring: DEFAULT_SETTINGS, indexCapacityBlocks: 16, locality: [], maxOngoing: 2,
    queue: { maxWaiting: 0, ttlMs: 1000 }, failOpen: false, circuit: DEFAULT_CIRCUIT_POLICY, healthCheckS: 0, healthPath: "/health",
    metrics: { scrapeMs: 0, path: "/metrics", timeoutMs: 1000, staleMs: 5000, failureThreshold: 3 },
    replicas: [{ id: "a", url: "http://a", weight: 1, labels: {} }, { id: "b", url: "http://b", weight: 1, labels: {} }],
  } as PoolSpec;
  const pick = (loadOfA: number) =>
    choose({ spec, circuits: new Map(), load: (id) => (id === "a" ? loadOfA : 0), pinned: null, forced: "a", random: { next: () => 0.5 } as never, now: 0 });

  it("goes to its replica alone and is capped when that replica is at max_ongoing_requests", () => {
    expect(pick(1)).toMatchObject({ order: ["a"], capped: false });
    expect(pick(2)).toMatchObject({ order: ["a"], capped: true });
  });
});
