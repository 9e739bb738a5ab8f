/**
 * Limits per key, team and model, enforced through the PrincipalLimits objects from two
 * router isolates (A: this test Worker; B: the second Worker of vitest.config.ts, bound to
 * the same objects) against fake upstreams that report usage.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { limitsObjectName } from "../../src/app/state/object-names";
import type { LimitSnapshot } from "../../src/core/limits/wire";
import { serversClosedAfterEach } from "../support/fleet";
import { openAIErrorOf, post, publish, routerFetch } from "../support/router";

const servers = serversClosedAfterEach();
const KEY = "sk-from-secret"; // TEST_CLIENT_KEY in vitest.config.ts
const auth = { authorization: `Bearer ${KEY}` };
const USAGE = { prompt_tokens: 10, completion_tokens: 5 };

type Send = (path: string, init?: RequestInit) => Promise<Response>;
const viaA: Send = (path, init) => routerFetch(path, init);
const viaB: Send = (path, init) => env.ROUTER_B.fetch(new Request(`https://router.test${path}`, init));

const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

/** A pool model `m` (priced 1,000 / 2,000 per million tokens), the test key named `name`, and the given limits. */
function limitedConfig(url: string, name: string, limits: string, extra = "") {
  return `models:
  m: { pool: p, pricing: { input: 1000, output: 2000 } }
pools:
  p: { replicas: [{ id: r, url: "${url}" }] }
auth:
  keys:
    - { name: ${name}, key: "\${TEST_CLIENT_KEY}", team: t1 }
limits:
${limits}
${extra}`;
}

function chatBody(extra: Record<string, unknown> = {}) {
  return JSON.stringify({ model: "m", max_tokens: 20, messages: [{ role: "user", content: "hi" }], ...extra });
}
const chatOn = (send: Send, extra: Record<string, unknown> = {}, headers: Record<string, string> = auth, signal?: AbortSignal) =>
  send("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", ...headers }, body: chatBody(extra), signal });

const snapshotOf = (bucket: string): Promise<LimitSnapshot> => (env.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket)) as unknown as { snapshot(): Promise<LimitSnapshot> }).snapshot();

/** The bucket's snapshot once `ready` holds (isolates report within LIMITS_SYNC_MS of traffic; GET /metrics flushes isolate A). */
async function bucketWhen(bucket: string, ready: (s: LimitSnapshot) => boolean, timeoutMs = 4_000): Promise<LimitSnapshot> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    await routerFetch("/metrics", { headers: { authorization: "Bearer test-admin-token" } }).then((r) => r.arrayBuffer());
    const snap = await snapshotOf(bucket);
    if (ready(snap) || Date.now() > until) return snap;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("requests per minute", () => {
  it("admits the limit, refuses the next with OpenAI's 429 and Retry-After, and tells the standing on every answer", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "rpm");
    const name = unique("alice");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 3 }`));
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await chatOn(viaA);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(res.headers.get("x-ratelimit-limit-requests")).toBe("3");
      expect(res.headers.get("x-ratelimit-reset-requests")).toMatch(/^\d+(ms|s|m\d+s)$/);
      remaining.push(res.headers.get("x-ratelimit-remaining-requests")!);
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    const refused = await chatOn(viaA);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(refused.headers.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(await openAIErrorOf(refused)).toMatchObject({ type: "requests", code: "rate_limit_exceeded", message: expect.stringContaining(`key=${name}: requests per minute 3`) });
    const snap = await bucketWhen(`key=${name}`, (s) => s.dims.requests?.spent === 3);
    expect(snap.dims.requests).toMatchObject({ spent: 3, total: 3 });
    expect((await server!.stats()).requests).toBe(3);
  });
});
