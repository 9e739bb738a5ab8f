/**
 * Limits as a user runs them: `switchyard serve`, a real client that gives up, a fake
 * upstream; where the client must leave during a Durable Object call, the objects are made
 * 1.5 s away (`SWITCHYARD_SIMULATED_DO_RTT_MS`).
 *
 * A client that leaves cancels the I/O its request awaits, and code after such an await
 * never runs unless something listens for the abort itself (the graph executor does; a pin
 * claim did not, so the limit gate now settles from the abort, and the claim is now held
 * open as well: serve-leaving.test.ts). Called through `app.fetch`
 * in a workerd test isolate the handler goes on instead, so only a real client over HTTP
 * shows what a leaving client leaves behind.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";
import { poolStepGraph, untilMinuteHas } from "../support/limits";
import { freePort, serve, type Served } from "../support/serve-cli";

const ADMIN_TOKEN = "e2e-admin-token";
const RTT_MS = 1_500; // each object call: long enough that the client can leave in the middle of one, whatever the machine's load
const KEY = "sk-e2e-alice";

const CONFIG = (upstreamUrl: string) => `models:
  m: { pool: p }
pools:
  p: { replicas: [{ id: a, url: "${upstreamUrl}" }] }
auth:
  keys:
    - { name: alice, key: "\${ALICE_KEY}" }
limits:
  - { key: alice, concurrent_requests: 1, tokens_per_minute: 1000000 }
${poolStepGraph("chain")}`;

/** A fresh router (so a fresh isolate) on the config above, its objects `rttMs` away, and its upstream. */
function limitedRouter(rttMs = RTT_MS): { url: () => string; upstream: () => FakeServer } {
  let tmp: string;
  let upstream: FakeServer;
  let router: Served;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-e2e-limits-"));
    upstream = await startFakeOpenAI({ id: "a" });
    const config = path.join(tmp, "limits.yaml");
    await writeFile(config, CONFIG(upstream.url));
    router = await serve(
      ["--config", config, "--port", "0", "--persist-to", path.join(tmp, "state"), "--var", `ALICE_KEY=${KEY}`, "--var", `ADMIN_TOKEN=${ADMIN_TOKEN}`, ...(rttMs > 0 ? ["--var", `SWITCHYARD_SIMULATED_DO_RTT_MS=${rttMs}`] : [])],
      tmp,
    );
  });
  afterAll(async () => {
    await router?.stop("SIGTERM").catch(() => {});
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });
  return { url: () => router.url, upstream: () => upstream };
}

const post = (url: string, signal?: AbortSignal, extra: Record<string, unknown> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }], ...extra }),
    ...(signal && { signal }),
  });

/** Held for good, the key's one slot would refuse every later request of the key (429, 0 left). */
async function expectServed(url: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const res = await post(url);
    expect(res.status, await res.clone().text()).toBe(200);
    await res.arrayBuffer();
  }
}

describe("switchyard serve with a concurrency limit of 1: a client that leaves", () => {
  describe("a model", () => {
    const router = limitedRouter();
    it("gives the key's slot back when its client leaves while the request waits for its pin to be claimed", { timeout: 30_000 }, async () => {
      const chat = `${router.url()}/v1/chat/completions`;
      // A fresh isolate: the key's grant and the pool's view come in one round trip (asked
      // at once), then the client's pin is claimed in a second. The client leaves half-way
      // through the claim, holding the key's only slot.
      await expect(post(chat, AbortSignal.timeout(RTT_MS * 1.5))).rejects.toThrow();
      expect(router.upstream().stats().byPath["/v1/chat/completions"] ?? 0, "left before anything was sent upstream").toBe(0);
      await expectServed(chat, 2);
      expect(router.upstream().stats().byPath["/v1/chat/completions"]).toBe(2);
    });
  });

  describe("a model's stream (its objects near: nothing here waits for one)", () => {
    // Objects 1.5 s away would make this test's reads of /admin/usage outlast the isolate's
    // grant, and a new grant can take longer than the 2 s a request waits for one.
    const router = limitedRouter(0);
    it("charges a client that leaves mid-stream what passed, and gives its slot back", { timeout: 50_000 }, async () => {
      const chat = `${router.url()}/v1/chat/completions`;
      // Tokens count per UTC minute: the reads before and after the stream must fall in one.
      await untilMinuteHas(20_000);
      await expectServed(chat, 1); // the isolate's grant, view and pin: the stream below waits for no object
      const tokensSpent = async () => {
        const res = await fetch(`${router.url()}/admin/usage?key=alice`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        const body = (await res.json()) as { buckets: { usage: { tokens?: { spent: number } } }[] };
        return body.buckets[0]!.usage.tokens!.spent;
      };
      await expect.poll(tokensSpent, { timeout: 5_000 }).toBeGreaterThan(0);
      const before = await tokensSpent();
      router.upstream().setBehaviour({ streamChunks: 50, chunkIntervalMs: 50, usage: { prompt_tokens: 9, completion_tokens: 50 } });
      const gone = new AbortController();
      const res = await post(chat, gone.signal, { stream: true, max_tokens: undefined }); // no max_tokens: the reservation (4,096 out) is far above what passes
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read();
      await reader.read();
      gone.abort();
      await reader.cancel().catch(() => {});
      router.upstream().setBehaviour({});
      // Charged the prompt's estimate and the output seen: more than nothing, less than the stream's whole 59.
      await expect.poll(async () => (await tokensSpent()) - before, { timeout: 5_000 }).toBeGreaterThan(0);
      expect((await tokensSpent()) - before).toBeLessThan(59);
      await expectServed(chat, 1);
    });
  });

  describe("a graph", () => {
    const router = limitedRouter();
    it("gives the key's slot back when its client leaves while a step waits for its pool's first view", { timeout: 30_000 }, async () => {
      const graph = `${router.url()}/graphs/chain`;
      // A fresh isolate: the key's grant comes in one round trip, then the step's pool view
      // in a second. The client leaves half-way through the step's wait; the executor ends
      // on the abort, and the graph's use (nothing) settles the key's slot.
      await expect(post(graph, AbortSignal.timeout(RTT_MS * 1.5))).rejects.toThrow();
      expect(router.upstream().stats().byPath["/v1/chat/completions"] ?? 0, "left before the step was sent").toBe(0);
      await expectServed(graph, 2);
      expect(router.upstream().stats().byPath["/v1/chat/completions"]).toBe(2);
    });
  });
});
