/**
 * When a limit's Durable Object cannot be heard, a request that needs it is answered 503
 * `limits_unavailable` with Retry-After: 1 (docs/limits.md), never a 429 that would tell the
 * principal it is over a limit, and nothing is sent upstream, charged or left reserved.
 *
 * The object fails for real: its stored state is made unreadable (the test writes it
 * through the object's own storage, then evicts it), so its constructor throws on every
 * restart and every call to it fails, as a corrupt or unreadable store would make it.
 */
import { furtherIsolates } from "../support/isolates";
import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { limitsObjectName } from "../../src/app/state/object-names";
import { GRANT_TTL_MS } from "../../src/core/limits/ledger";
import { DIMENSIONS } from "../../src/core/limits/wire";
import type { LimitNews, LimitSnapshot } from "../../src/core/limits/wire";
import { clock } from "../../src/lib/clock";
import { serversClosedAfterEach } from "../support/fleet";
import { KEY, limitedConfig, poolStepGraph, USAGE } from "../support/limits";
import { publish } from "../support/router";
import { earlyInMinute, frozenClock } from "../support/state";
import { within } from "../support/timing";

let time: ReturnType<typeof frozenClock> | undefined;
beforeEach(() => {
  time = earlyInMinute(); // tests that freeze the clock replace it
});
const further = furtherIsolates(() => {
  time?.restore();
  time = undefined;
});

/** A router isolate of its own, so the test can read what its limit agents hold. */
function isolate(extraEnv: Record<string, string> = {}) {
  const { state, send } = further(extraEnv);
  /** What this isolate holds reserved in the bucket, and has yet to report to its object (usage, refusals). */
  const held = (bucket: string) => {
    const agent = state.limitAgents.get(bucket);
    const reserved = Object.fromEntries(DIMENSIONS.map((dim) => [dim, agent?.ledger.reservedOf(dim, clock.now()) ?? 0]));
    return { reserved, unreported: agent ? agent.backlog + (agent.ledger.drain() === null ? 0 : 1) : 0 };
  };
  return { state, send, held };
}

const servers = serversClosedAfterEach();
const auth = { authorization: `Bearer ${KEY}` };
const json = { "content-type": "application/json" };
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const stubOf = (bucket: string) => env.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket));
const snapshotOf = (bucket: string): Promise<LimitSnapshot> => (stubOf(bucket) as unknown as { snapshot(): Promise<LimitSnapshot> }).snapshot();

/** The bucket's object, its stored state made unreadable and the object restarted: every call to it throws from now on. */
async function breakObject(bucket: string): Promise<void> {
  const stub = stubOf(bucket);
  await runInDurableObject(stub, async (_instance, state) => {
    await state.storage.put("state", { limits: {}, dims: { requests: { kind: "minute:", window: 0, endsAt: 0, spent: 0, grants: "unreadable" } } });
  });
  await evictDurableObject(stub);
  // Awaited, not handed to expect(): vitest would read properties of the RPC promise, each a pipelined call that fails unhandled.
  const read = await snapshotOf(bucket).then(() => "read", (error: unknown) => String(error));
  expect(read).not.toBe("read");
}

const chat = JSON.stringify({ model: "m", max_tokens: 20, messages: [{ role: "user", content: "hi" }] });

describe("a limit's object that cannot be heard", () => {
  it("answers 503 limits_unavailable with Retry-After 1 in every surface's shape, sends nothing upstream and holds or charges nothing", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "unavail");
    const name = unique("down");
    const graph = unique("gdown");
    // Two buckets, reserved in this order: the key's on model m, which can reserve, then the key's own, whose object fails (the graph has only that one).
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, model: m, requests_per_minute: 100, tokens_per_minute: 100000 }\n  - { key: ${name}, concurrent_requests: 10 }`, poolStepGraph(graph)));
    const healthy = `key=${name},model=m`;
    const bucket = `key=${name}`;
    await breakObject(bucket);
    const iso = isolate();

    const openai = await iso.send("/v1/chat/completions", { method: "POST", headers: { ...json, ...auth }, body: chat });
    expect(openai.status).toBe(503);
    expect(openai.headers.get("retry-after")).toBe("1");
    expect(openai.headers.get("x-switchyard-limit")).toBeNull();
    expect(await openai.json()).toEqual({ error: { type: "service_unavailable", code: "limits_unavailable", param: null, message: expect.stringContaining(`'${bucket}' could not be read`) } });

    const responses = await iso.send("/v1/responses", { method: "POST", headers: { ...json, ...auth }, body: JSON.stringify({ model: "m", input: "hi", max_output_tokens: 20 }) });
    expect(responses.status).toBe(503);
    expect(responses.headers.get("retry-after")).toBe("1");
    expect(await responses.json()).toMatchObject({ error: { type: "service_unavailable", code: "limits_unavailable" } });

    const anthropic = await iso.send("/v1/messages", { method: "POST", headers: { ...json, "x-api-key": KEY }, body: JSON.stringify({ model: "m", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }) });
    expect(anthropic.status).toBe(529); // Anthropic's overloaded, which its clients retry
    expect(anthropic.headers.get("retry-after")).toBe("1");
    expect(await anthropic.json()).toEqual({ type: "error", error: { type: "overloaded_error", message: expect.stringContaining("could not be read") } });

    const kserve = await iso.send("/v2/models/m/infer", { method: "POST", headers: { ...json, ...auth }, body: JSON.stringify({ inputs: [] }) });
    expect(kserve.status).toBe(503);
    expect(kserve.headers.get("retry-after")).toBe("1");
    expect(await kserve.json()).toEqual({ error: expect.stringContaining("could not be read") });

    const graphRes = await iso.send(`/graphs/${graph}`, { method: "POST", headers: { ...json, ...auth }, body: chat });
    expect(graphRes.status).toBe(503);
    expect(graphRes.headers.get("retry-after")).toBe("1");
    expect(await graphRes.json()).toEqual({ error: "Failed to process request", cause: expect.stringContaining("could not be read") });

    expect((await server!.stats()).requests).toBe(0);
    // What the healthy bucket reserved for each request was given back, and nothing was charged to it.
    const none = { reserved: { requests: 0, tokens: 0, spend: 0, concurrent: 0 }, unreported: 0 };
    expect(iso.held(healthy)).toEqual(none);
    expect(iso.held(bucket)).toEqual(none);
    await iso.state.flush();
    const snap = await snapshotOf(healthy);
    expect(snap.dims.requests!.spent).toBe(0);
    expect(snap.counters).toEqual({ requests: 0, tokens: 0, spend: 0, refusals: {} });
  });

  it("a cold isolate asks every object the request waits for at once: each bucket's and the pool's, though the first bucket's cannot answer", async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "cold");
    const name = unique("cold");
    // The key's own bucket comes first and its object fails; the key's bucket on model m could reserve.
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, concurrent_requests: 10 }\n  - { key: ${name}, model: m, requests_per_minute: 100 }`));
    const bucket = `key=${name}`;
    const healthy = `key=${name},model=m`;
    await breakObject(bucket);
    const iso = isolate();

    const res = await iso.send("/v1/chat/completions", { method: "POST", headers: { ...json, ...auth }, body: chat });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: "limits_unavailable", message: expect.stringContaining(`'${bucket}' could not be read`) } });
    // Asked in the same wait as the failing one, not after it: one after the other, neither would have been asked at all.
    await expect.poll(() => iso.state.limitAgents.get(healthy)?.hasView ?? false).toBe(true);
    await expect.poll(() => iso.state.knownPool("p")?.hasView ?? false).toBe(true);
    expect((await server!.stats()).requests).toBe(0);
    expect(iso.held(healthy)).toEqual({ reserved: { requests: 0, tokens: 0, spend: 0, concurrent: 0 }, unreported: 0 });
  });

  it("a held grant keeps serving while its object is down; once it lapses the answer is 503, not a 429, and nothing is charged for it", async () => {
    time = frozenClock(Date.UTC(2027, 0, 1, 12, 0, 10));
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "lapse");
    const name = unique("lapse");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 100 }`));
    const bucket = `key=${name}`;
    const iso = isolate();
    const send = () => iso.send("/v1/chat/completions", { method: "POST", headers: { ...json, ...auth }, body: chat });
    const first = await send();
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    await iso.state.flush();
    expect((await snapshotOf(bucket)).dims.requests!.spent).toBe(1);

    await breakObject(bucket);
    const held = await send(); // within the grant: no call to the object
    expect(held.status).toBe(200);
    await held.arrayBuffer();

    time.advance(GRANT_TTL_MS);
    const lapsed = await send();
    expect(lapsed.status).toBe(503);
    expect(lapsed.headers.get("retry-after")).toBe("1");
    expect(await lapsed.json()).toMatchObject({ error: { type: "service_unavailable", code: "limits_unavailable" } });
    // The one request answered on the held grant is still owed to the object; the refused one adds nothing.
    expect((await server!.stats()).requests).toBe(2);
    const agent = iso.state.limitAgents.get(bucket)!;
    expect(agent.ledger.reservedOf("requests", clock.now())).toBe(0);
    const pending = agent.ledger.drain();
    const owed = [...(agent as unknown as { unacked: LimitNews[] }).unacked, ...(pending ? [pending] : [])];
    expect(owed.flatMap((b) => b.usage).filter((u) => u.dim === "requests").reduce((n, u) => n + u.amount, 0)).toBe(1);
    expect(owed.every((b) => b.refusals === undefined)).toBe(true);
  });

  it("once a wait for an object went unanswered, later requests are refused at once until it answers, then served", { timeout: 30_000 }, async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "unheard");
    const name = unique("unheard");
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 100 }`, "routing: { shared_state: false }\n"));
    const bucket = `key=${name}`;
    const rttMs = 6_000; // three cold waits long: the first exchange answers well after the first request gave up
    const iso = isolate({ SWITCHYARD_SIMULATED_DO_RTT_MS: String(rttMs) });
    const send = async () => {
      const started = Date.now();
      const res = await iso.send("/v1/chat/completions", { method: "POST", headers: { ...json, ...auth }, body: chat });
      return { res, ms: Date.now() - started };
    };
    const first = await send();
    expect(first.res.status).toBe(503);
    expect(first.ms).toBeGreaterThanOrEqual(1_900); // it waited its COLD_WAIT_MS
    await first.res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 700)); // past one sync interval: before, the next request waited 2 s again
    const second = await send();
    expect(second.res.status).toBe(503);
    expect(await second.res.json()).toMatchObject({ error: { code: "limits_unavailable" } });
    expect(second.ms, "refused at once, not after another cold wait").toBeLessThan(1_000);
    const until = Date.now() + 12_000;
    while (!iso.state.limitAgents.get(bucket)!.hasView && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const served = await send();
    expect(served.res.status).toBe(200);
    await served.res.arrayBuffer();
    expect((await server!.stats()).requests).toBe(1);
  });

  it("an object slower than the cold wait is unavailable too; its late answer then serves, and the refused request was never charged", { timeout: 30_000 }, async () => {
    const [server] = await servers([{ answer: { content: "hello", usage: USAGE } }], "slow");
    const name = unique("slow");
    // Stateless routing: only the limits object is waited for, not a pool's view or a pin.
    await publish(limitedConfig(server!.url, name, `  - { key: ${name}, requests_per_minute: 100 }`, "routing: { shared_state: false }\n"));
    const bucket = `key=${name}`;
    const rttMs = 2_400; // past the 2 s a cold request waits (COLD_WAIT_MS)
    const iso = isolate({ SWITCHYARD_SIMULATED_DO_RTT_MS: String(rttMs) });
    const send = () => iso.send("/v1/chat/completions", { method: "POST", headers: { ...json, ...auth }, body: chat });
    const refused = await send();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: { code: "limits_unavailable" } });
    const until = Date.now() + 5_000;
    while (!iso.state.limitAgents.get(bucket)!.hasView && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    const served = await send();
    expect(served.status).toBe(200);
    await served.arrayBuffer();
    // Its report takes a simulated round trip (longer than a flush waits): read until it has landed.
    let snap = await snapshotOf(bucket);
    for (const until = Date.now() + 8_000; snap.dims.requests?.spent !== 1 && Date.now() < until; snap = await snapshotOf(bucket)) await new Promise((r) => setTimeout(r, 100));
    expect(snap.dims.requests!.spent).toBe(1);
    expect(snap.counters).toMatchObject({ requests: 1, refusals: {} });
    expect((await server!.stats()).requests).toBe(1);
  });
});

