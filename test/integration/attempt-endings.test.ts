/**
 * Every kind of upstream call × every way an attempt can end, through the real Worker
 * against fake model servers on 127.0.0.1: the one attempt engine (src/app/engine/) must
 * settle each ending the same way whatever built the plan.
 *
 * For each cell:
 *   - every guard the kind takes (a pool lease, a RouteWise slot, a quota reservation) is
 *     released once the request is over;
 *   - the outcome is recorded exactly once where the kind records one (a pool's request
 *     counter, RouteWise's answer counter, a probe's latency sample) — 1 when the client got
 *     an answer, or always for pools, which also count failures;
 *   - when the client leaves (before headers, or mid-body), the upstream sees its
 *     connection closed within 200 ms, and nothing else is tried afterwards.
 * A mirror is fire-and-forget by design: the client's leaving must not cut it.
 * A cell that cannot exist for a kind says why (an external router's answer is read
 * whole before any byte reaches the client, so it has no "mid-body").
 */
import { describe, expect, it } from "vitest";
import type { FakeBehaviour, FleetServer } from "../support/fleet";
import { deadUrl, serversClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, publish, routerFetch } from "../support/router";
import { metricsText, metricValue } from "../support/state";

const servers = serversClosedAfterEach();
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const CLOSE_WITHIN_MS = 200; // the issue's bound: the upstream sees the client's leaving this fast
const SLOW_MS = 3_000; // an upstream slower than any try timeout or deadline below

type EndingName = "answer" | "client_leaves_before_headers" | "client_leaves_mid_body" | "try_timeout" | "deadline" | "connect_refused" | "retryable_status" | "broken_body";

interface Ending {
  /** What the upstream under test does; "refused": its URL refuses connections. */
  upstream: FakeBehaviour | "refused";
  client: "reads" | "leaves_before_headers" | "leaves_mid_body";
  /** The client asks for a streamed answer. */
  stream: boolean;
  tryTimeoutMs: number;
  deadlineMs: number;
}

const ENDINGS: Record<EndingName, Ending> = {
  answer: { upstream: {}, client: "reads", stream: false, tryTimeoutMs: 5_000, deadlineMs: 10_000 },
  client_leaves_before_headers: { upstream: { hang: true }, client: "leaves_before_headers", stream: false, tryTimeoutMs: 5_000, deadlineMs: 10_000 },
  client_leaves_mid_body: { upstream: { streamChunks: 20, chunkIntervalMs: 50 }, client: "leaves_mid_body", stream: true, tryTimeoutMs: 5_000, deadlineMs: 10_000 },
  try_timeout: { upstream: { latencyMs: SLOW_MS }, client: "reads", stream: false, tryTimeoutMs: 200, deadlineMs: 10_000 },
  // The deadline covers the streamed body too: headers come at once, the body would take 3 s.
  deadline: { upstream: { streamChunks: 60, chunkIntervalMs: 50 }, client: "reads", stream: true, tryTimeoutMs: 300, deadlineMs: 400 },
  connect_refused: { upstream: "refused", client: "reads", stream: false, tryTimeoutMs: 5_000, deadlineMs: 10_000 },
  retryable_status: { upstream: { status: 503 }, client: "reads", stream: false, tryTimeoutMs: 5_000, deadlineMs: 10_000 },
  broken_body: { upstream: { streamChunks: 6, streamCutAfter: 2 }, client: "reads", stream: true, tryTimeoutMs: 5_000, deadlineMs: 10_000 },
};

interface Cell {
  ending: Ending;
  /** The upstream under test, or null when its URL refuses connections. */
  scenario: FleetServer | null;
  scenarioUrl: string;
  /** A healthy upstream: a fallback, the graph's other step, the usage API. */
  spare: FleetServer;
}

interface Prepared {
  send(signal: AbortSignal): Promise<Response>;
  /** Guards held now (leases, slots, reserved quota units): 0 once the request is over. */
  guards(): Promise<number>;
  /** Outcomes recorded, and how many there should be; null when the kind records none of its own. */
  records(delivered: boolean): Promise<{ actual: number; expected: number } | null>;
  /** The client's leaving reaches the upstream under test (not for a mirror). */
  followsClient: boolean;
  /** The spare is a target tried after the one under test fails: never after the client left. */
  spareIsFallback: boolean;
  /** Resolves once the answer under test is streaming, when the client's own response comes only at the end. */
  streaming?: () => Promise<void>;
}

interface Kind {
  name: string;
  /** A reason when the ending cannot exist for this kind. */
  notApplicable?: Partial<Record<EndingName, string>>;
  /** The upstream behaviour for an ending, when the kind's upstream is not a model server (an external router). */
  behaviour?: (ending: Ending) => FakeBehaviour | "refused";
  prepare(cell: Cell): Promise<Prepared>;
}

const routingYaml = (e: Ending, extra = "") => `routing: { affinity: { enabled: false }, try_timeout_ms: ${e.tryTimeoutMs}, deadline_ms: ${e.deadlineMs}${extra} }`;
const chatBody = (model: string, stream: boolean) => JSON.stringify({ model, stream, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
const postJson = (path: string, body: string, signal: AbortSignal, headers: Record<string, string> = {}) =>
  routerFetch(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body, signal });

async function poolLeases(pool: string): Promise<number> {
  return metricValue(await metricsText(), "switchyard_inflight", { pool });
}

async function poolRecords(pool: string): Promise<{ actual: number; expected: number }> {
  return { actual: metricValue(await metricsText(), "switchyard_requests_total", { pool }), expected: 1 };
}

interface RouteView {
  id: string;
  quota: { reserved_here: number } | null;
  concurrency: { in_use_here: number } | null;
  envelope: { samples: number } | null;
}

async function routesOf(model: string): Promise<RouteView[]> {
  const body = (await (await routerFetch("/routing", { headers: admin })).json()) as { models: Record<string, { routes: RouteView[] }> };
  return body.models[model]!.routes;
}

async function routeGuards(model: string): Promise<number> {
  return (await routesOf(model)).reduce((n, r) => n + (r.quota?.reserved_here ?? 0) + (r.concurrency?.in_use_here ?? 0), 0);
}

/** A pool of two replicas picked round robin from a fresh cursor: the one under test first, the spare as its fallback. */
function poolYaml(pool: string, cell: Cell): string {
  return `pools:\n  ${pool}:\n    policy: round_robin\n    circuit: { consecutive_failures: 5 }\n    replicas:\n      - { id: a-under-test, url: "${cell.scenarioUrl}" }\n      - { id: b-spare, url: "${cell.spare.url}" }\n`;
}

const manifest = (name: string, nodes: string) => `---\napiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: ${name}\nspec:\n  nodes:\n    root:\n${nodes}`;

const PRICE = "pricing: { input: 0.000001, output: 0.000002 }";

/** A quota route's usage API: always the spare's, so the quota is usable whatever the upstream under test does. */
const quotaFields = (cell: Cell) => `provider_type: quota, quota: { limit: 1000000 }, quota_source: { url: "${cell.spare.url}/usage", used_path: data.used, window: rolling, window_s: 3600 }`;

async function seed(model: string, routes: string[]): Promise<void> {
  const samples = routes.map((route) => ({ route, ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }));
  const res = await routerFetch(`/admin/routewise/${model}/calibrate`, { method: "POST", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ samples }) });
  if (res.status !== 200) throw new Error(`seeding answered ${res.status}: ${await res.text()}`);
}

const KINDS: Kind[] = [
  {
    name: "pool fallback",
    async prepare(cell) {
      const [model, pool] = [unique("m"), unique("p")];
      await publish(`models:\n  ${model}: { pool: ${pool} }\n${poolYaml(pool, cell)}${routingYaml(cell.ending)}\n`);
      return {
        send: (signal) => postJson("/v1/chat/completions", chatBody(model, cell.ending.stream), signal),
        guards: () => poolLeases(pool),
        records: () => poolRecords(pool),
        followsClient: true,
        spareIsFallback: true,
      };
    },
  },
  {
    name: "RouteWise leg",
    async prepare(cell) {
      // Alpha 0: the free concurrency route (the one under test) carries everything; the paid one is its fallback.
      const model = unique("rw");
      await publish(
        `models:\n  ${model}:\n    router: routewise\n    router_params: { budget_alpha: 0 }\n    routes:\n` +
          `      - { id: slots, url: "${cell.scenarioUrl}", provider_type: concurrency, concurrency: { limit: 1 } }\n` +
          `      - { id: paid, url: "${cell.spare.url}", provider_type: on_demand, ${PRICE} }\n${routingYaml(cell.ending)}\n`,
      );
      return {
        send: (signal) => postJson("/v1/chat/completions", chatBody(model, cell.ending.stream), signal),
        guards: () => routeGuards(model),
        records: async (delivered) => ({ actual: metricValue(await metricsText(), "switchyard_routewise_requests_total", { model }), expected: delivered ? 1 : 0 }),
        followsClient: true,
        spareIsFallback: true,
      };
    },
  },
  {
    name: "hedge pair",
    async prepare(cell) {
      // The quota route (free, so first) under test, hedged after 150 ms to a concurrency route that behaves the same:
      // both legs are in flight, each with its guard (a quota reservation, a slot).
      const model = unique("hedge");
      const twin = await servers([cell.ending.upstream === "refused" ? {} : hedged(cell.ending.upstream)], "twin-");
      const twinUrl = cell.ending.upstream === "refused" ? await deadUrl() : twin[0]!.url;
      if (cell.scenario && cell.ending.upstream !== "refused") await cell.scenario.setBehaviour(hedged(cell.ending.upstream));
      await publish(
        `models:\n  ${model}:\n    router: routewise\n    router_params: { budget_alpha: 0, envelope_min_samples: 1, latency_hedge_mode: slo, latency_slo_ms: 150 }\n    routes:\n` +
          `      - { id: quota, url: "${cell.scenarioUrl}", ${quotaFields(cell)} }\n` +
          `      - { id: slots, url: "${twinUrl}", provider_type: concurrency, concurrency: { limit: 1 }, ${PRICE} }\n${routingYaml(cell.ending)}\n`,
      );
      await seed(model, ["quota", "slots"]);
      return {
        send: (signal) => postJson("/v1/chat/completions", chatBody(model, cell.ending.stream), signal),
        guards: () => routeGuards(model),
        records: async (delivered) => ({ actual: metricValue(await metricsText(), "switchyard_routewise_requests_total", { model }), expected: delivered ? 1 : 0 }),
        followsClient: true,
        spareIsFallback: false,
      };
    },
  },
  {
    name: "graph URL step",
    async prepare(cell) {
      const graph = unique("g");
      // One retry: after the client left, not even the same URL is tried again.
      await publish(`${routingYaml(cell.ending)}\n${manifest(graph, `      routerType: Sequence\n      steps:\n      - serviceUrl: ${cell.scenarioUrl}/v1/chat/completions\n        retries: 1\n        timeoutMs: ${cell.ending.tryTimeoutMs}\n`)}`);
      return {
        send: (signal) => postJson(`/graphs/${graph}`, chatBody("fake-model", cell.ending.stream), signal),
        guards: async () => 0,
        records: async () => null,
        followsClient: true,
        spareIsFallback: false,
      };
    },
  },
  {
    name: "graph pool step",
    async prepare(cell) {
      const [pool, graph] = [unique("p"), unique("g")];
      await publish(`${poolYaml(pool, cell)}${routingYaml(cell.ending)}\n${manifest(graph, `      routerType: Sequence\n      steps:\n      - { pool: ${pool}, path: /v1/chat/completions, timeoutMs: ${cell.ending.tryTimeoutMs} }\n`)}`);
      return {
        send: (signal) => postJson(`/graphs/${graph}`, chatBody("fake-model", cell.ending.stream), signal),
        guards: () => poolLeases(pool),
        records: () => poolRecords(pool),
        followsClient: true,
        spareIsFallback: true,
      };
    },
  },
  {
    name: "mirror",
    async prepare(cell) {
      // The client is answered by the spare; a copy goes to a pool whose only replica is the one under test.
      const [pool, graph] = [unique("p"), unique("g")];
      const mirrorPool = `pools:\n  ${pool}:\n    replicas:\n      - { id: a-under-test, url: "${cell.scenarioUrl}" }\n`;
      const mirrorTimeout = Math.min(cell.ending.tryTimeoutMs, 1_000); // a hung copy is given up within a second
      await publish(
        `${mirrorPool}${routingYaml(cell.ending)}\n${manifest(graph, `      routerType: Sequence\n      steps:\n      - serviceUrl: ${cell.spare.url}/v1/chat/completions\n      - { pool: ${pool}, path: /v1/chat/completions, mirror: 100, timeoutMs: ${mirrorTimeout} }\n`)}`,
      );
      return {
        send: (signal) => postJson(`/graphs/${graph}`, chatBody("fake-model", cell.ending.stream), signal),
        guards: () => poolLeases(pool),
        records: () => poolRecords(pool),
        followsClient: false,
        spareIsFallback: false,
      };
    },
  },
  {
    name: "external router",
    notApplicable: {
      client_leaves_mid_body: "a router's answer is read whole before any byte reaches the client",
      broken_body: "a router's answer is read whole: a cut one is not a route (covered as a 502 in graphs-extras)",
      deadline: "its call is bounded by the try timeout, which lies within the deadline; only the child's answer can run into the deadline (the graph URL step row)",
    },
    behaviour: (e) => (e.upstream === "refused" ? "refused" : routerBehaviour(e.upstream)),
    async prepare(cell) {
      const graph = unique("g");
      await publish(
        `${routingYaml(cell.ending)}\n${manifest(graph, `      routerType: Router\n      router: { type: external, serviceUrl: "${cell.scenarioUrl}/route" }\n      steps:\n      - serviceUrl: ${cell.spare.url}/v1/chat/completions\n`)}`,
      );
      return {
        send: (signal) => postJson(`/graphs/${graph}`, chatBody("fake-model", cell.ending.stream), signal),
        guards: async () => 0,
        records: async () => null,
        followsClient: true,
        spareIsFallback: true, // the child step comes after the router's answer
      };
    },
  },
  {
    name: "calibration probe",
    async prepare(cell) {
      const model = unique("probe");
      await publish(
        `models:\n  ${model}:\n    router: routewise\n    router_params: { envelope_min_samples: 1 }\n    routes:\n` +
          `      - { id: quota, url: "${cell.scenarioUrl}", ${quotaFields(cell)} }\n${routingYaml(cell.ending)}\n`,
      );
      return {
        send: (signal) => postJson(`/admin/routewise/${model}/calibrate`, JSON.stringify({ probes: 1, max_tokens: 4 }), signal, admin),
        guards: () => routeGuards(model),
        records: async () => {
          const samples = (await routesOf(model))[0]!.envelope?.samples ?? 0;
          return { actual: samples, expected: cell.ending === ENDINGS.answer ? 1 : 0 };
        },
        // The operator's answer comes after the probes: "mid-body" is the probe's body, streaming to the router.
        streaming: async () => {
          await expect.poll(() => requestsTo(cell.scenario), { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(1);
          await new Promise((resolve) => setTimeout(resolve, 300)); // several 50 ms chunks in
        },
        followsClient: true,
        spareIsFallback: false,
      };
    },
  },
];

/** The same ending, later: a hedge at 150 ms finds both legs in flight. */
function hedged(b: FakeBehaviour): FakeBehaviour {
  return b.hang || b.latencyMs ? b : { ...b, latencyMs: 300 };
}

function routerBehaviour(b: FakeBehaviour): FakeBehaviour {
  const route = { body: [0] };
  if (b.status !== undefined) return { reply: { status: b.status, body: { error: "down" } } };
  return { ...(b.hang && { hang: true }), ...(b.latencyMs && { latencyMs: b.latencyMs }), reply: route };
}

async function requestsTo(server: FleetServer | null): Promise<number> {
  if (!server) return 0;
  const stats = await server.stats();
  return Object.entries(stats.byPath).reduce((n, [path, count]) => n + (path === "/usage" || path === "/health" ? 0 : count), 0);
}

async function drive(kind: Kind, name: EndingName): Promise<void> {
  const ending = ENDINGS[name];
  const behaviour = kind.behaviour ? kind.behaviour(ending) : ending.upstream;
  const [spare, scenario] = await servers([{ usage: { data: { used: 0 } } }, behaviour === "refused" ? {} : behaviour], "end-");
  const cell: Cell = { ending, scenario: behaviour === "refused" ? null : scenario!, scenarioUrl: behaviour === "refused" ? await deadUrl() : scenario!.url, spare: spare! };
  const p = await kind.prepare(cell);
  const spareBefore = await requestsTo(spare!);

  const client = new AbortController();
  const pending = p.send(client.signal);
  let leftAt: number | null = null;
  let delivered = false;
  if (ending.client === "leaves_before_headers") {
    await expect.poll(() => requestsTo(cell.scenario), { timeout: 5_000, interval: 5 }).toBeGreaterThanOrEqual(1);
    leftAt = Date.now();
    client.abort();
    const res = await pending.catch(() => null);
    await res?.body?.cancel().catch(() => {});
  } else if (ending.client === "leaves_mid_body" && p.streaming) {
    await p.streaming();
    leftAt = Date.now();
    client.abort();
    const res = await pending.catch(() => null);
    await res?.body?.cancel().catch(() => {});
  } else if (ending.client === "leaves_mid_body") {
    const res = await pending;
    delivered = res.status === 200;
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk is here: the body is streaming
    leftAt = Date.now();
    client.abort();
    await reader.cancel().catch(() => {});
  } else {
    const res = await pending;
    delivered = res.status < 500 && res.headers.has("x-switchyard-attempts");
    await res.arrayBuffer().catch(() => {});
  }

  if (leftAt !== null && cell.scenario) {
    if (p.followsClient) {
      await expect.poll(async () => (await cell.scenario!.stats()).abortedAt.length, { timeout: 2_000, interval: 5, message: "the upstream never saw the client's leaving" }).toBeGreaterThan(0);
      const closedAt = (await cell.scenario.stats()).abortedAt[0]!;
      expect(closedAt - leftAt, "ms from the client's leaving to the upstream's closed connection").toBeLessThan(CLOSE_WITHIN_MS);
    } else {
      // Fire-and-forget: the copy is not cut by the client.
      await new Promise((resolve) => setTimeout(resolve, CLOSE_WITHIN_MS * 2));
      expect((await cell.scenario.stats()).abortedAt.filter((at) => at - leftAt! < CLOSE_WITHIN_MS)).toEqual([]);
    }
  }
  if (leftAt !== null && p.followsClient) {
    // Nothing else was tried once the client had left.
    expect(await requestsTo(cell.scenario)).toBe(1);
    if (p.spareIsFallback) expect(await requestsTo(spare!)).toBe(spareBefore);
  }
  await expect.poll(() => p.guards(), { timeout: 8_000, interval: 50, message: "a guard was not released" }).toBe(0);
  const records = await p.records(delivered);
  if (records) {
    await expect.poll(async () => (await p.records(delivered))!.actual, { timeout: 5_000, interval: 50 }).toBe(records.expected);
  }
}

describe("every plan kind × every ending: guards released, outcome recorded once, the client's leaving reaches the upstream", () => {
  for (const kind of KINDS) {
    describe(kind.name, () => {
      for (const name of Object.keys(ENDINGS) as EndingName[]) {
        // An ending that cannot exist for the kind is left out; its reason is in the kind's notApplicable.
        // Retried: CLOSE_WITHIN_MS is a wall-clock bound, and a full suite on 2 shared cores
        // missed it by tens of ms about once a run (218, 263 ms). An upstream never told of
        // the leaving, a guard held or an outcome counted twice fails every try alike.
        if (kind.notApplicable?.[name] === undefined) it(name, { timeout: 30_000, retry: 2 }, () => drive(kind, name));
      }
    });
  }
});
