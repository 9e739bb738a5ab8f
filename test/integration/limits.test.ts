/**
 * Limits per key, team and model, enforced through the PrincipalLimits objects from two
 * router isolates (A: this test Worker; B: the second Worker of vitest.config.ts, bound to
 * the same objects) against fake upstreams that report usage.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { limitsObjectName } from "../../src/app/state/object-names";
import { IsolateState } from "../../src/app/state/isolate-state";
import { GRANT_TTL_MS } from "../../src/core/limits/ledger";
import type { Dimension, LimitSnapshot } from "../../src/core/limits/wire";
import { clock } from "../../src/lib/clock";
import { cryptoRandom } from "../../src/lib/random";
import { ConfigSource } from "../../src/platform/config-source";
import { createApp } from "../../src/platform/surfaces/app";
import { serversClosedAfterEach } from "../support/fleet";
import { openAIErrorOf, publish, routerFetch } from "../support/router";
import { frozenClock } from "../support/state";
import { within } from "../support/timing";

let time: ReturnType<typeof frozenClock> | undefined;
const isolates: IsolateState[] = [];
const contexts: ExecutionContext[] = [];
afterEach(async () => {
  time?.restore();
  time = undefined;
  await within(Promise.all(contexts.splice(0).map((ctx) => waitOnExecutionContext(ctx))), 15_000, "the extra isolates' waitUntil work");
  for (const state of isolates.splice(0)) state.dispose();
}, 20_000);

/** A further router isolate: the same app with its own IsolateState, which a test can read and dispose of. */
function isolate() {
  const state = new IsolateState();
  isolates.push(state);
  const app = createApp({ configSource: new ConfigSource(), random: cryptoRandom(), state });
  const send: Send = (path, init) => {
    const ctx = createExecutionContext();
    contexts.push(ctx);
    return app.fetch(new Request(`https://router.test${path}`, init), env, ctx);
  };
  const reserved = (bucket: string, dim: Dimension) => state.limitAgents.get(bucket)?.ledger.reservedOf(dim, clock.now()) ?? 0;
  return { state, send, reserved };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

describe("tokens and spend", () => {
  it("settle from the upstream's usage, streamed or not; a stream the client did not ask usage for reaches it without", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "tpm");
    const name = unique("tok");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, tokens_per_minute: 100000, spend: { amount: 100, window: day } }`));
    const plain = await chatOn(viaA);
    expect(plain.status).toBe(200);
    expect((await plain.json()) as unknown).toMatchObject({ usage: { prompt_tokens: 10 } });
    expect(plain.headers.get("x-ratelimit-limit-tokens")).toBe("100000");
    const streamed = await chatOn(viaA, { stream: true });
    const text = await streamed.text();
    expect(text).toContain("[DONE]");
    expect(text).not.toContain("prompt_tokens"); // the usage chunk the router asked for is not passed on
    const snap = await bucketWhen(`key=${name}`, (s) => s.dims.tokens?.spent === 30);
    expect(snap.dims.tokens!.spent).toBe(30);
    expect(snap.dims.spend!.spent).toBeCloseTo(2 * (10 * 0.001 + 5 * 0.002), 9);
    // The upstream was asked for the stream's usage.
    const asked = (await server!.stats()).requests;
    expect(asked).toBe(2);
  });
});

describe("every ending settles once", () => {
  /** One isolate, one request that ends some way; then nothing is left reserved and the object counts what was used. */
  async function ending(behaviour: Parameters<typeof servers>[0][number], run: (send: Send) => Promise<void>, routing = "") {
    const [server] = await servers([behaviour], "end");
    const name = unique("end");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 1000, tokens_per_minute: 100000, concurrent_requests: 4 }`, routing));
    const iso = isolate();
    await run(iso.send);
    const bucket = `key=${name}`;
    const until = Date.now() + 3_000;
    while ((iso.reserved(bucket, "tokens") > 0 || iso.reserved(bucket, "concurrent") > 0) && Date.now() < until) await sleep(20);
    expect({ tokens: iso.reserved(bucket, "tokens"), concurrent: iso.reserved(bucket, "concurrent"), requests: iso.reserved(bucket, "requests") }).toEqual({ tokens: 0, concurrent: 0, requests: 0 });
    await iso.state.flush();
    return (await snapshotOf(bucket)).dims;
  }

  it("an answer", async () => {
    const dims = await ending({ answer: { content: "hello", usage: USAGE } }, async (send) => {
      await (await chatOn(send)).arrayBuffer();
    });
    expect(dims).toMatchObject({ requests: { spent: 1 }, tokens: { spent: 15 } });
  });

  it("the client leaving before headers", async () => {
    const dims = await ending({ latencyMs: 1_000 }, async (send) => {
      const controller = new AbortController();
      const pending = chatOn(send, {}, auth, controller.signal).catch(() => null);
      await sleep(150);
      controller.abort();
      await pending;
    });
    expect(dims).toMatchObject({ requests: { spent: 1 }, tokens: { spent: 0 } });
  });

  it("the client leaving mid-stream (charged what passed, estimated)", async () => {
    const dims = await ending({ streamChunks: 50, chunkIntervalMs: 40 }, async (send) => {
      const controller = new AbortController();
      const res = await chatOn(send, { stream: true }, auth, controller.signal);
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.cancel().catch(() => {});
    });
    expect(dims.requests!.spent).toBe(1);
    expect(dims.tokens!.spent).toBeGreaterThan(0);
    expect(dims.tokens!.spent).toBeLessThan(22); // the prompt estimate (2) + what passed, not the whole reservation
  });

  it("an upstream error", async () => {
    const dims = await ending({ status: 500 }, async (send) => {
      expect((await chatOn(send)).status).toBe(502);
    });
    expect(dims).toMatchObject({ requests: { spent: 1 }, tokens: { spent: 0 } });
  });

  it("the deadline", async () => {
    const dims = await ending(
      { hang: true },
      async (send) => {
        expect((await chatOn(send)).status).toBe(504);
      },
      "routing: { try_timeout_ms: 300, deadline_ms: 300 }",
    );
    expect(dims).toMatchObject({ requests: { spent: 1 }, tokens: { spent: 0 } });
  });

  it("a stream cut by the upstream (charged what passed, estimated)", async () => {
    const dims = await ending({ streamChunks: 10, streamCutAfter: 2 }, async (send) => {
      await (await chatOn(send, { stream: true })).text().catch(() => "");
    });
    expect(dims.requests!.spent).toBe(1);
    expect(dims.tokens!.spent).toBeGreaterThan(0);
    expect(dims.tokens!.spent).toBeLessThan(22);
  });
});
