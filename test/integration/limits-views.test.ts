/**
 * What limits show outside the requests they refuse: /metrics counters per bucket
 * (by names, never the key), and the counters surviving their object's restart.
 * One router isolate (this test Worker) against a fake upstream that reports usage.
 */
import { env } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { limitsObjectName } from "../../src/app/state/object-names";
import { chatRequests, serversClosedAfterEach } from "../support/fleet";
import { KEY, limitedConfig, USAGE } from "../support/limits";
import { ADMIN_TOKEN, publish, routerFetch } from "../support/router";
import { earlyInMinute } from "../support/state";

let time: ReturnType<typeof earlyInMinute> | undefined;
beforeEach(() => {
  time = earlyInMinute();
});
afterEach(() => time?.restore());

const servers = serversClosedAfterEach();
const auth = { authorization: `Bearer ${KEY}` };
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

const chat = (headers: Record<string, string> = auth) =>
  routerFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ model: "m", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }) });

/** A sample's value from Prometheus text, by its exact label set (null: no such sample). */
function sample(text: string, family: string, labels: Record<string, string>): number | null {
  const want = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== family) continue;
    const got = [...(m[2] ?? "").matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]).sort(([a], [b]) => a!.localeCompare(b!));
    if (JSON.stringify(got) === JSON.stringify(want)) return Number(m[3]);
  }
  return null;
}

/** /metrics once `ready` holds of its text (isolate reports reach the objects within a sync; /metrics flushes this isolate first). */
async function metricsWhen(ready: (text: string) => boolean, timeoutMs = 4_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await routerFetch("/metrics", { headers: admin });
    expect(res.status).toBe(200);
    const text = await res.text();
    if (ready(text) || Date.now() > until) return text;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("/metrics for limits", () => {
  it("counts requests, tokens, spend and refusals per bucket by key name, team and model, never the key, and keeps them across the object's restart", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-metrics");
    const name = unique("alice");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 2 }\n  - { team: t1, model: m, spend: { amount: 100, window: day } }`));
    for (let i = 0; i < 2; i++) {
      const res = await chat();
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const refused = await chat();
    expect(refused.status).toBe(429);
    await refused.arrayBuffer();

    const key = { scope: "key", key: name };
    const team = { scope: "team,model", team: "t1", model: "m" };
    const counted = (text: string) => sample(text, "switchyard_limit_refusals_total", { ...key, reason: "requests" }) === 1 && sample(text, "switchyard_limit_tokens_total", team) === 30;
    const text = await metricsWhen(counted);
    const expected = (t: string) => ({
      keyRequests: sample(t, "switchyard_limit_requests_total", key),
      keyTokens: sample(t, "switchyard_limit_tokens_total", key), // not limited by the key's rule, counted all the same
      keyEstimatedTokens: sample(t, "switchyard_limit_estimated_tokens_total", key), // every answer reported its usage
      keyRefusedRequests: sample(t, "switchyard_limit_refusals_total", { ...key, reason: "requests" }),
      keyRefusedSpend: sample(t, "switchyard_limit_refusals_total", { ...key, reason: "spend" }),
      teamRequests: sample(t, "switchyard_limit_requests_total", team),
      teamSpend: sample(t, "switchyard_limit_spend_total", team),
      teamRefusedRequests: sample(t, "switchyard_limit_refusals_total", { ...team, reason: "requests" }),
    });
    const want = { keyRequests: 2, keyTokens: 30, keyEstimatedTokens: 0, keyRefusedRequests: 1, keyRefusedSpend: 0, teamRequests: 2, teamSpend: 0.04, teamRefusedRequests: 0 };
    expect(expected(text)).toEqual(want);
    expect(text).not.toContain(KEY);
    expect(text).toContain("# TYPE switchyard_limit_refusals_total counter");

    // Stored with the allowance: an evicted object restarts with the same counts, not zero, not doubled.
    for (const bucket of [`key=${name}`, "team=t1,model=m"]) await evictDurableObject(env.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket)));
    const after = await routerFetch("/metrics", { headers: admin }).then((r) => r.text());
    expect(expected(after)).toEqual(want);
  });
});

describe("refusals by reason", () => {
  /** A further named key: its secret and the auth.keys entry that names it by digest. */
  async function namedKey(name: string) {
    const secret = `sk-${name}-${crypto.randomUUID()}`;
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    return { secret, entry: `    - { name: ${name}, key: "sha256:${digest}" }` };
  }

  it("tokens, concurrency and spend: each refusal in its own OpenAI shape, counted on /metrics under its reason and no other", async () => {
    const [server] = await servers([{ latencyMs: 300, answer: { content: "hello", usage: USAGE } }], "limit-reasons");
    const [tokens, busy, spender] = [unique("tok"), unique("busy"), unique("spend")];
    const busyKey = await namedKey(busy);
    const spenderKey = await namedKey(spender);
    // One reservation: 2 estimated prompt tokens + max_tokens 20 = 22 tokens, and 0.042 at m's prices; one answer uses 15 tokens, 0.02.
    const rules = `  - { key: ${tokens}, tokens_per_minute: 50 }\n  - { key: ${busy}, concurrent_requests: 1 }\n  - { key: ${spender}, spend: { amount: 0.05, window: month } }`;
    await publish(limitedConfig(server!.url, tokens, rules).replace("team: t1 }", `team: t1 }\n${busyKey.entry}\n${spenderKey.entry}`));
    const as = (secret: string) => ({ authorization: `Bearer ${secret}` });
    const drained = async (res: Response) => (await res.arrayBuffer(), res.status);

    // Tokens: 22 + 22 fit in 50 (15 + 15 used), the third does not; one that needs more than the whole limit says so.
    expect([await drained(await chat()), await drained(await chat())]).toEqual([200, 200]);
    const short = await chat();
    expect(short.status).toBe(429);
    expect(short.headers.get("x-switchyard-limit")).toBe(`key=${tokens} tokens`);
    expect(await short.json()).toMatchObject({ error: { type: "tokens", code: "rate_limit_exceeded", message: expect.stringContaining("tokens per minute 50, 20 left, this request needs 22") } });
    const huge = await routerFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] }) });
    expect(huge.status).toBe(429);
    expect(huge.headers.get("retry-after"), "no window's end makes room for it").toBeNull();
    expect(huge.headers.get("x-should-retry"), "nor would an SDK's own retries").toBe("false");
    expect(short.headers.get("x-should-retry"), "a window's end does make room for this one").toBeNull();
    expect(huge.headers.get("x-switchyard-limit")).toBe(`key=${tokens} tokens`);
    expect(await huge.json()).toMatchObject({ error: { type: "tokens", code: "rate_limit_exceeded", message: expect.stringContaining("this request alone needs 102, more than the whole limit, so retrying will not help; send a shorter prompt or a lower max_tokens") } });

    // Concurrency: a second request while the first is in flight.
    const first = chat(as(busyKey.secret));
    await expect.poll(() => chatRequests(server!)).toBe(3); // the upstream holds it (the tokens key's two answers before it)
    const second = await chat(as(busyKey.secret));
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("1");
    expect(await second.json()).toMatchObject({ error: { type: "requests", code: "rate_limit_exceeded" } });
    expect(await drained(await first)).toBe(200);

    // Spend: 0.02 spent leaves 0.03, short of the next reservation's 0.042.
    expect(await drained(await chat(as(spenderKey.secret)))).toBe(200);
    const broke = await chat(as(spenderKey.secret));
    expect(broke.status).toBe(429);
    expect(await broke.json()).toMatchObject({ error: { type: "insufficient_quota", code: "insufficient_quota" } });

    const refusals = (t: string, key: string) => Object.fromEntries(["requests", "tokens", "concurrency", "spend"].map((reason) => [reason, sample(t, "switchyard_limit_refusals_total", { scope: "key", key, reason })]));
    const want = { [tokens]: { requests: 0, tokens: 2, concurrency: 0, spend: 0 }, [busy]: { requests: 0, tokens: 0, concurrency: 1, spend: 0 }, [spender]: { requests: 0, tokens: 0, concurrency: 0, spend: 1 } };
    const seen = (t: string) => Object.fromEntries([tokens, busy, spender].map((key) => [key, refusals(t, key)]));
    const text = await metricsWhen((t) => JSON.stringify(seen(t)) === JSON.stringify(want));
    expect(seen(text)).toEqual(want);
  });
});

describe("a plain and a per-tenant rule on one key", () => {
  it("are two series on /metrics, told apart by scope", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-scopes");
    const name = unique("portal");
    // Without X-Switchyard-Tenant a trusted key's per-tenant rule counts it in its tenant-less bucket: both buckets see it.
    const rules = `  - { key: ${name}, requests_per_minute: 100 }\n  - { key: ${name}, per_tenant: true, requests_per_minute: 1 }`;
    await publish(limitedConfig(server!.url, name, rules).replace("team: t1 }", "team: t1, trusted_tenant_header: true }"));
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await chat();
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    expect(statuses).toEqual([200, 429]);
    const plain = { scope: "key", key: name };
    const perTenant = { scope: "key,per_tenant", key: name };
    const of = (t: string) => ({
      plainRequests: sample(t, "switchyard_limit_requests_total", plain),
      plainRefused: sample(t, "switchyard_limit_refusals_total", { ...plain, reason: "requests" }),
      perTenantRequests: sample(t, "switchyard_limit_requests_total", perTenant),
      perTenantRefused: sample(t, "switchyard_limit_refusals_total", { ...perTenant, reason: "requests" }),
    });
    const want = { plainRequests: 1, plainRefused: 0, perTenantRequests: 1, perTenantRefused: 1 };
    const text = await metricsWhen((t) => JSON.stringify(of(t)) === JSON.stringify(want));
    expect(of(text)).toEqual(want);
    expect(text).not.toMatch(new RegExp(`switchyard_limit_requests_total\\{key="${name}"\\}`)); // no series without its scope
  });
});

describe("GET /admin/usage's numbers", () => {
  it("are sums without binary noise: ten answers at 0.02 read 0.2 spent, 0.8 remaining", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-tidy");
    const name = unique("tidy");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, spend: { amount: 1, window: day } }`));
    for (let i = 0; i < 10; i++) {
      const res = await chat();
      expect(res.status).toBe(200);
      await res.arrayBuffer(); // settled one by one: the object adds 0.02 ten times
      await routerFetch("/metrics", { headers: admin }).then((r) => r.arrayBuffer()); // and hears each apart
    }
    const read = async () => ((await (await routerFetch(`/admin/usage?key=${name}`, { headers: admin })).json()) as { buckets: { usage: { spend: { spent: number; remaining: number } } }[] }).buckets[0]!.usage.spend;
    await expect.poll(async () => (await read()).spent, { timeout: 4_000 }).toBeGreaterThan(0.19);
    expect(await read()).toMatchObject({ spent: 0.2, remaining: 0.8 });
  });
});

describe("/routing and limits", () => {
  it("the admin view shows each bucket's limits and what is left; the public view does not", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-routing");
    const name = unique("bob");
    await publish(`${limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 5, spend: { amount: 1, window: month } }`)}routing: { public_view: true }\n`);
    const res = await chat();
    expect(res.status).toBe(200);
    await res.arrayBuffer();

    const view = (await (await routerFetch("/routing", { headers: admin })).json()) as { limits: { bucket: string; scope: Record<string, string>; usage: Record<string, Record<string, unknown>> }[] };
    const bucket = view.limits.find((b) => b.bucket === `key=${name}`);
    expect(bucket?.scope).toEqual({ key: name });
    expect(bucket!.usage.requests).toMatchObject({ limit: 5, window: "minute", spent: 1, remaining: 4, resets_at: expect.stringMatching(/^\d{4}-.*Z$/) });
    expect(bucket!.usage.spend).toMatchObject({ limit: 1, window: "month", spent: 0.02, remaining: 0.98 });
    expect(bucket!.usage.spend!.held_by_isolates).toEqual(expect.any(Number));

    const publicRes = await routerFetch("/routing", { headers: auth });
    expect(publicRes.status).toBe(200);
    const publicText = await publicRes.text();
    expect(publicText).not.toContain(name);
    expect(publicText).not.toContain("remaining");
    expect(JSON.parse(publicText)).not.toHaveProperty("limits");
  });
});

describe("/routing reads after this isolate's own reports", () => {
  it("with shared_state off too: a request's use shows in the very next read, not a sync later", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-flush");
    const name = unique("flush");
    // Limits live in objects whatever shared_state says; without it nothing else would flush this isolate's reports.
    await publish(`${limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 5, tokens_per_minute: 1000 }`)}routing: { shared_state: false }\n`);
    const res = await chat();
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const view = (await (await routerFetch("/routing", { headers: admin })).json()) as { limits: { bucket: string; usage: Record<string, { spent: number }> }[] };
    const bucket = view.limits.find((b) => b.bucket === `key=${name}`)!;
    expect({ requests: bucket.usage.requests!.spent, tokens: bucket.usage.tokens!.spent }).toEqual({ requests: 1, tokens: 15 });
  });
});

describe("the near-budget warning", () => {
  it("is on every answer once the spend used passes warn_at, and not before", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-warning");
    const name = unique("carol");
    // 0.02 an answer: four settled (0.08) are under 0.09 of 1, five (0.10) past it.
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, spend: { amount: 1, window: day, warn_at: 0.09 } }\n  - { team: t1, spend: { amount: 100, window: month } }`));
    for (let i = 0; i < 4; i++) {
      const res = await chat();
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      // A non-streamed answer is read whole and settled before its headers: i + 1 settled, at most 0.08 used.
      expect(res.headers.get("x-switchyard-budget-warning")).toBeNull();
    }
    await routerFetch("/metrics", { headers: admin }).then((r) => r.arrayBuffer()); // the four settled reach the object
    // The fifth answer's own spend takes the key past warn_at: its headers say so.
    for (let i = 0; i < 2; i++) {
      const res = await chat();
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      expect(res.headers.get("x-switchyard-budget-warning")).toMatch(new RegExp(`^spend 1[02]% of 1 used \\(key ${name}, day\\)$`));
    }
  });

  it("is refused past 1 and below 0 with its path", async () => {
    for (const bad of [1.5, 0]) {
      const res = await routerFetch("/admin/config", {
        method: "PUT",
        headers: admin,
        body: limitedConfig("http://127.0.0.1:9", "x", `  - { key: x, spend: { amount: 1, window: day, warn_at: ${bad} } }`),
      });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("limits[0].spend.warn_at");
    }
  });
});

describe("a fixed budget past its reset date", () => {
  it("refuses once spent without a Retry-After, and tells the SDKs not to retry: no window's end makes room", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "limit-past-fixed");
    const name = unique("past");
    // 0.05 holds one reservation (about 0.045: max_tokens 20 at 0.002), then 0.02 is spent and the next does not fit.
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, spend: { amount: 0.05, window: fixed, reset_at: "2026-01-01T00:00:00Z" } }`));
    const first = await chat();
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    let refused: Response | null = null;
    for (let i = 0; i < 5 && refused === null; i++) {
      const res = await chat();
      if (res.status === 429) refused = res;
      else await res.arrayBuffer();
    }
    expect(refused, "the budget ran out").not.toBeNull();
    expect(refused!.headers.get("retry-after")).toBeNull();
    expect(refused!.headers.get("x-should-retry")).toBe("false");
    expect(await refused!.json()).toMatchObject({ error: { code: "insufficient_quota", message: expect.stringContaining("does not reset again") } });
  });
});

describe("a limited principal's x-ratelimit headers", () => {
  it("are the router's alone: an upstream's own (the operator's provider quota) never mix in", async () => {
    const upstreamLimits = { "x-ratelimit-limit-requests": "999", "x-ratelimit-limit-tokens": "5000000", "x-ratelimit-remaining-tokens": "4999000", "x-ratelimit-reset-tokens": "1ms", "anthropic-ratelimit-requests-limit": "55" };
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE }, responseHeaders: upstreamLimits }], "limit-upstream-headers");
    const name = unique("own");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 100 }`));
    const res = await chat();
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("100");
    for (const header of ["x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", "anthropic-ratelimit-requests-limit"]) expect(res.headers.get(header), header).toBeNull();
  });
});
