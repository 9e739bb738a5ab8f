/**
 * Shared state across router isolates. Isolate A is this test Worker's own router
 * (`exports.default`); isolate B is a second Worker running the same bundle, bound to the
 * same Durable Objects and KV (vitest.config.ts, ROUTER_B); further isolates are fresh
 * `createApp` instances with their own IsolateState, which a test can dispose of as an
 * evicted isolate would be. Each isolate routes from its own view and reports in batches;
 * these tests check that what one isolate learns reaches the others within the bounds
 * the README states, and that nothing leaks when an isolate disappears.
 */
import { furtherIsolates } from "../support/isolates";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ISOLATE_REPORT_TTL_MS } from "../../src/platform/objects/pool-state";
import { createApp } from "../../src/platform/surfaces/app";
import { IsolateState } from "../../src/app/state/isolate-state";
import { SYNC_INTERVAL_MS } from "../../src/app/state/pool-agent";
import { BANDIT_SYNC_MS } from "../../src/app/state/bandit-agent";
import { banditObjectName } from "../../src/app/state/object-names";
import { chatRequests, serversClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, publish, routerFetch } from "../support/router";
import { affinityEvents, frozenClock, poolStub, poolWhen, statefulConfig } from "../support/state";
import { within } from "../support/timing";

let time: ReturnType<typeof frozenClock> | undefined;
const further = furtherIsolates(() => {
  time?.restore();
  time = undefined;
});
const servers = serversClosedAfterEach();

const LENIENT_CIRCUIT = "circuit: { consecutive_failures: 1000000, min_requests: 1000000 }";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Send = (path: string, init?: RequestInit) => Promise<Response>;
const viaA: Send = (path, init) => routerFetch(path, init);
const viaB: Send = (path, init) => env.ROUTER_B.fetch(new Request(`https://router.test${path}`, init));

/** A further isolate: the same app with its own module-scope state, optionally its own env. */
function isolate(extraEnv: Record<string, string> = {}) {
  return further(extraEnv);
}

function chatVia(send: Send, model: string, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return send("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    signal,
  });
}

async function served(send: Send, model: string, headers: Record<string, string> = {}) {
  const res = await chatVia(send, model, headers);
  await res.arrayBuffer();
  return { status: res.status, replica: res.headers.get("x-switchyard-replica"), attempts: res.headers.get("x-switchyard-attempts") };
}

const as = (user: string) => ({ authorization: `Bearer ${user}` });
const forcedTo = (replica: string) => ({ "x-route-pin": replica, "x-switchyard-admin-token": ADMIN_TOKEN });
const inflightOf = (snap: { replicas: { id: string; inflight: number }[] }, id: string) => snap.replicas.find((r) => r.id === id)!.inflight;

describe("pins across isolates", () => {
  it("a pin created in one isolate is honoured by another, both ways", async () => {
    const fleet = await servers([{}, {}, {}, {}], "pin-");
    const config = statefulConfig({ model: `pins-${crypto.randomUUID().slice(0, 8)}`, replicas: fleet.map((s, i) => ({ id: `r${i}`, url: s.url })) });
    await publish(config.yaml);

    const users = Array.from({ length: 12 }, (_, i) => `user-${i}`);
    const pinned = new Map<string, string>();
    for (const [i, user] of users.entries()) pinned.set(user, (await served(i % 2 === 0 ? viaA : viaB, config.model, as(user))).replica!);
    // Each user now asks the other isolate, which has never seen them: its shard answers.
    for (const [i, user] of users.entries()) {
      for (let k = 0; k < 3; k++) expect((await served(i % 2 === 0 ? viaB : viaA, config.model, as(user))).replica, user).toBe(pinned.get(user));
    }
    // 12 picks over 4 replicas, all alike with p = 4^-11: the pins are real choices.
    expect(new Set(pinned.values()).size).toBeGreaterThan(1);
    // Cache hits reach the shards in each isolate's next batch; B's is sent now.
    await (await viaB("/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).arrayBuffer();
    const events = await affinityEvents(config.model);
    expect(events).toMatchObject({ miss: 12, created: 12, dropped_unavailable: 0 });
    expect(events.hit).toBe(36); // 12 claims answered from the shard + 24 served from the isolates' caches
  });

  it("concurrent first requests from two isolates get one pin", async () => {
    const fleet = await servers([{}, {}, {}], "race-");
    const config = statefulConfig({ model: `race-${crypto.randomUUID().slice(0, 8)}`, replicas: fleet.map((s, i) => ({ id: `r${i}`, url: s.url })) });
    await publish(config.yaml);
    for (let u = 0; u < 8; u++) {
      const results = await Promise.all([viaA, viaB, viaA, viaB].map((send) => served(send, config.model, as(`racer-${u}`))));
      expect(new Set(results.map((r) => r.replica)).size, JSON.stringify(results)).toBe(1);
    }
    expect(await affinityEvents(config.model)).toMatchObject({ created: 8 });
  });
});

describe("circuits across isolates", () => {
  // A trips the circuit on its own evidence and stops using the replica at once; B learns
  // it from the pool's object: A reports a trip at once (urgent), and B's view, refreshed
  // in the background when a request finds it older than SYNC_INTERVAL_MS, carries it from
  // then on. Measured here: 450-470 ms, after 2 of B's requests fell back.
  it("a circuit opened by failures seen in one isolate is open there at once, and in another within the bound", async () => {
    const [bad, good] = await servers([{ status: 500 }, {}], "trip-");
    const config = statefulConfig({
      replicas: [{ id: "bad", url: bad!.url, weight: 1000 }, { id: "good", url: good!.url, weight: 1 }],
      routing: "{ affinity: { enabled: false } }",
      poolExtra: "circuit: { consecutive_failures: 8, cooldown_ms: 600000, max_cooldown_ms: 600000 }",
    });
    await publish(config.yaml);
    const modelRequests = () => chatRequests(bad!);

    // B has a view of the pool from before: every circuit closed (and no failure of its own).
    await bad!.setBehaviour({});
    expect((await served(viaB, config.model)).status).toBe(200);
    await bad!.setBehaviour({ status: 500 });
    const warmUp = await modelRequests(); // 1 if B's request drew "bad" (1,000 in 1,001), else 0

    // A sends until "bad" has failed 8 times (weight 1000 of 1001 makes it first almost
    // always; counting its failures, not A's requests, keeps a rare other draw harmless).
    for (let i = 0; i < 30 && (await modelRequests()) - warmUp < 8; i++) expect(await served(viaA, config.model)).toMatchObject({ status: 200, replica: "good" });
    expect((await modelRequests()) - warmUp).toBe(8);
    const tripped = Date.now();
    const before = await modelRequests();
    for (let i = 0; i < 5; i++) expect(await served(viaA, config.model)).toMatchObject({ status: 200, replica: "good", attempts: "1" });
    expect(await modelRequests()).toBe(before); // open in A at once: not even tried

    // B sends a request every 200 ms until one skips "bad".
    let fallbacksInB = 0;
    let learnedAfterMs = -1;
    while (Date.now() - tripped < 5_000) {
      const r = await served(viaB, config.model);
      expect(r).toMatchObject({ status: 200, replica: "good" });
      if (r.attempts === "1") {
        learnedAfterMs = Date.now() - tripped;
        break;
      }
      fallbacksInB++;
      await sleep(200);
    }
    console.log(`isolates: B learned the open circuit ${learnedAfterMs} ms after A tripped it, after ${fallbacksInB} fallback(s) of its own`);
    expect(learnedAfterMs).toBeGreaterThanOrEqual(0);
    // The bound is SYNC_INTERVAL_MS plus two round trips plus B's 200 ms pacing; a loaded
    // machine gets some slack on top.
    expect(learnedAfterMs).toBeLessThanOrEqual(3 * SYNC_INTERVAL_MS);
    expect(fallbacksInB).toBeLessThan(8); // B's own failures alone could not have tripped it
    const snap = await poolWhen(config.pool, (s) => s.transitions.length > 0);
    expect(snap.transitions).toEqual([{ labels: { replica: "bad", from: "closed", to: "open" }, value: 1 }]);
  }, 20_000);
});

// "busy" never answers the requests held there: they stay in flight until their clients
// let go at the end, so nothing in between depends on how fast the machine is.
describe("load across isolates", () => {
  async function heldFleet(policy: string) {
    const [busy, idle1, idle2] = await servers([{ hang: true }, {}, {}], `held-${policy}-`);
    const config = statefulConfig({
      replicas: [{ id: "busy", url: busy!.url }, { id: "idle1", url: idle1!.url }, { id: "idle2", url: idle2!.url }],
      poolExtra: `policy: ${policy}\n    ${LENIENT_CIRCUIT}`,
      routing: "{ affinity: { enabled: false } }",
    });
    await publish(config.yaml);
    return { ...config, busy: busy! };
  }

  it("in-flight counts from every isolate add up at the pool's object", async () => {
    const config = await heldFleet("least_loaded");
    const clients = new AbortController();
    const held = [
      ...Array.from({ length: 2 }, () => chatVia(viaA, config.model, forcedTo("busy"), clients.signal)),
      ...Array.from({ length: 3 }, () => chatVia(viaB, config.model, forcedTo("busy"), clients.signal)),
    ];
    const snap = await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 5, 10_000);
    expect(inflightOf(snap, "busy")).toBe(5);
    expect(snap.isolates).toBe(2);
    clients.abort();
    for (const res of held) await expect(res).rejects.toThrow();
    expect(inflightOf(await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 0, 10_000), "busy")).toBe(0);
  }, 20_000);

  // Ignoring A's load, B's 20 picks would avoid "busy" with p = (2/3)^20 ≈ 3e-4 (least
  // loaded breaks the 0-0-0 tie at random; power of two draws it first in 1 of 3).
  it.each(["least_loaded", "power_of_two"])("%s in one isolate steers around load held by another", async (policy) => {
    const config = await heldFleet(policy);
    const clients = new AbortController();
    const held = Array.from({ length: 3 }, () => chatVia(viaA, config.model, forcedTo("busy"), clients.signal));
    expect(inflightOf(await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 3, 10_000), "busy")).toBe(3);
    // The router counts a request in flight before its connection reaches "busy": wait for "busy" to hold all three.
    await expect.poll(() => chatRequests(config.busy), { timeout: 10_000, interval: 10 }).toBeGreaterThanOrEqual(3);
    await config.busy.setBehaviour({}); // the three keep hanging; a pick of "busy" below would be answered, and counted
    await (await viaB("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).arrayBuffer(); // B exchanges with the pool now (as it would within SYNC_INTERVAL_MS)
    const seen = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const r = await served(viaB, config.model);
      expect(r.status).toBe(200);
      seen.set(r.replica!, (seen.get(r.replica!) ?? 0) + 1);
    }
    expect(seen.get("busy") ?? 0, JSON.stringify([...seen])).toBe(0);
    clients.abort();
    for (const res of held) await expect(res).rejects.toThrow();
    expect(inflightOf(await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 0, 10_000), "busy")).toBe(0);
  }, 20_000);
});

describe("an isolate that disappears", () => {
  it("has its in-flight expire at the pool's object; the others' load, its pins and the circuits stay", async () => {
    const [busy, other] = await servers([{}, {}], "gone-");
    const config = statefulConfig({
      model: `gone-${crypto.randomUUID().slice(0, 8)}`,
      replicas: [{ id: "busy", url: busy!.url }, { id: "other", url: other!.url }],
      poolExtra: LENIENT_CIRCUIT,
      routing: "{ affinity: { enabled: true, ttl_s: 600 } }",
    });
    await publish(config.yaml);
    const c = isolate();
    const pinnedInC = (await served(c.send, config.model, as("client-of-c"))).replica;

    // Four requests held on "busy": it takes them and never answers, until it is closed at the end.
    await busy!.setBehaviour({ hang: true });
    const before = await chatRequests(busy!);
    const heldByC = Array.from({ length: 3 }, () => chatVia(c.send, config.model, forcedTo("busy")));
    const heldByA = chatVia(viaA, config.model, forcedTo("busy"));
    expect(inflightOf(await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 4, 10_000), "busy")).toBe(4);
    await expect.poll(() => chatRequests(busy!), { timeout: 10_000, interval: 10 }).toBeGreaterThanOrEqual(before + 4);
    await busy!.setBehaviour({}); // the four keep hanging (a request keeps the behaviour it came in with); new ones are answered

    c.state.dispose(); // evicted mid-traffic: it never reports again
    time = frozenClock();
    time.advance(ISOLATE_REPORT_TTL_MS + 1_000); // past every report's expiry, A's included
    // A's next heartbeat (its request is still in flight) restores its own 1; C's 3 stay gone.
    const snap = await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 1, 5_000);
    expect(inflightOf(snap, "busy")).toBe(1);
    expect(snap.isolates).toBe(1);

    // The pin C made is shared truth: A, which never saw this client, honours it.
    expect((await served(viaA, config.model, as("client-of-c"))).replica).toBe(pinnedInC);

    await busy!.close(); // ends the four held requests (502: the connection is gone)
    for (const res of await Promise.all([...heldByC, heldByA])) await res.arrayBuffer();
    time.restore();
    time = undefined;
    expect(inflightOf(await poolWhen(config.pool, (s) => inflightOf(s, "busy") === 0), "busy")).toBe(0);
  }, 20_000);
});

describe("the hot path", () => {
  // Every Durable Object call of isolate D takes RTT_MS (simulated at the stub seam, as
  // `npm run bench -- --do-rtt-ms` does), so a request's latency shows how many it awaited.
  const RTT_MS = 1_000;

  it("awaits no object call in steady state; a pin miss costs one", async () => {
    const [a, b] = await servers([{}, {}], "hot-");
    const config = statefulConfig({ model: `hot-${crypto.randomUUID().slice(0, 8)}`, replicas: [{ id: "a", url: a!.url }, { id: "b", url: b!.url }] });
    await publish(config.yaml);
    const d = isolate({ SWITCHYARD_SIMULATED_DO_RTT_MS: String(RTT_MS) });
    const timed = async (user: string) => {
      const start = Date.now();
      const r = await served(d.send, config.model, as(user));
      expect(r.status).toBe(200);
      return Date.now() - start;
    };

    // Cold isolate: the pool's state (one call), then the client's pin (one call).
    expect(await timed("regular")).toBeGreaterThanOrEqual(2 * RTT_MS);
    // Steady state, including requests that find the view stale and refresh it in the background.
    const steady: number[] = [];
    for (let i = 0; i < 8; i++) {
      steady.push(await timed("regular"));
      if (i === 3) await sleep(SYNC_INTERVAL_MS + 100);
    }
    expect(Math.max(...steady), JSON.stringify(steady)).toBeLessThan(RTT_MS);
    // A client this isolate has not seen: one call to its shard, no more.
    const miss = await timed("newcomer");
    expect(miss).toBeGreaterThanOrEqual(RTT_MS);
    expect(miss).toBeLessThan(2 * RTT_MS);
  }, 30_000);

  it("a learning router awaits no object call in steady state: arms from the isolate's view, feedback batched", async () => {
    const [a, b] = await servers([{ reply: { status: 200, body: { predictions: ["A"] } } }, { reply: { status: 200, body: { predictions: ["B"] } } }], "bandit-hot-");
    const graph = `bandit-hot-${crypto.randomUUID().slice(0, 8)}`;
    const steps = `      - name: a\n        serviceUrl: ${a!.url}\n      - name: b\n        serviceUrl: ${b!.url}\n`;
    await publish(`apiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: ${graph}\nspec:\n  nodes:\n    root:\n      routerType: Router\n      router: { type: epsilon_greedy, n_branches: 2, epsilon: 0.1, best_branch: 0 }\n      steps:\n${steps}`);
    const d = isolate({ SWITCHYARD_SIMULATED_DO_RTT_MS: String(RTT_MS) });
    const timed = async (path: string, body: unknown) => {
      const start = Date.now();
      const res = await d.send(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const json = (await res.json()) as { meta?: { routing: { root: number } } };
      expect(res.status, JSON.stringify(json)).toBe(200);
      return { ms: Date.now() - start, json };
    };

    // Cold isolate: the node's arms (one call).
    const first = await timed(`/graphs/${graph}`, {});
    expect(first.ms).toBeGreaterThanOrEqual(RTT_MS);
    const steady: number[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await timed(`/graphs/${graph}`, {});
      steady.push(answer.ms);
      steady.push((await timed("/feedback", { request: {}, response: answer.json, reward: 1 })).ms);
      if (i === 2) await sleep(BANDIT_SYNC_MS + 100); // the view is now stale: refreshed in the background
    }
    expect(Math.max(...steady), JSON.stringify(steady)).toBeLessThan(RTT_MS);
    // The six credits reach the node's object in the isolate's batches, each once.
    const bandit = env.BANDIT.getByName(banditObjectName(graph, "root"));
    await expect.poll(async () => (await bandit.snapshot())?.arms.reduce((n, arm) => n + arm.tries, 0), { timeout: 10_000 }).toBe(6);
  }, 30_000);
});
