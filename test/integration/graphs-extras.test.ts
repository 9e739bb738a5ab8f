/**
 * What Switchyard adds to KServe's InferenceGraph: validation at load, models and
 * protocol endpoints that target graphs, per-step timeouts and retries, mirrors, tail
 * streaming, the route header, and Seldon-style Router nodes with feedback.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { banditObjectName } from "../../src/app/state/object-names";
import type { FakeBehaviour, FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, chat, post, publish, routerFetch } from "../support/router";
import { CHI2_CRITICAL_1E4, chiSquare } from "../support/statistics";
import { readWithin } from "../support/timing";
import { metricsText } from "../support/state";

const spawned: FleetServer[] = [];
async function server(behaviour: FakeBehaviour, id = "svc"): Promise<FleetServer> {
  const s = await spawnServer(behaviour, id);
  spawned.push(s);
  return s;
}
const model = (body: unknown, status = 200, extra: FakeBehaviour = {}) => server({ reply: { status, body }, ...extra }, "model");
afterEach(async () => {
  await Promise.all(spawned.splice(0).map((s) => s.close()));
});

const uniqueName = (base: string) => `${base}-${crypto.randomUUID().slice(0, 6)}`;
const manifest = (name: string, nodes: string) =>
  `apiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: ${name}\nspec:\n  nodes:\n${nodes}`;

async function rejected(yaml: string): Promise<string[]> {
  const res = await routerFetch("/admin/config", { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: yaml });
  expect(res.status, await res.clone().text()).toBe(400);
  return ((await res.json()) as { issues: { path: string; message: string }[] }).issues.map((i) => `${i.path}: ${i.message}`);
}

describe("validation at load: every invalid graph is refused with its path", () => {
  const svc = "http://127.0.0.1:9";
  it.each([
    ["no root node", manifest("g", `    other:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${svc}\n`), "graphs.g.nodes: root node not found, InferenceGraph needs a node with name 'root' as the root node of the graph"],
    ["a step without a target", manifest("g", "    root:\n      routerType: Sequence\n      steps:\n      - name: foo-bar\n"), 'graphs.g.nodes.root.steps[0]: Step 0 ("foo-bar") in node "root" of InferenceGraph "g" does not specify an inference target'],
    ["two targets", manifest("g", `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${svc}\n        nodeName: root\n`), 'graphs.g.nodes.root.steps[0]: Step 0 ("") in node "root" of InferenceGraph "g" specifies more than one of nodeName, serviceName, serviceUrl'],
    ["duplicate step names", manifest("g", `    root:\n      routerType: Ensemble\n      steps:\n      - name: step1\n        serviceUrl: ${svc}\n      - name: step1\n        serviceUrl: ${svc}\n`), 'graphs.g.nodes.root.steps[1].name: Node "root" of InferenceGraph "g" contains more than one step with name "step1"'],
    ["Splitter weights summing to 110", manifest("g", `    root:\n      routerType: Splitter\n      steps:\n      - serviceUrl: ${svc}\n        weight: 80\n      - serviceUrl: ${svc}\n        weight: 30\n`), "graphs.g.nodes.root: InferenceGraph[g] Node[root] splitter node: the sum of traffic weights for all routing targets should be 100"],
    ["a Splitter step without weight", manifest("g", `    root:\n      routerType: Splitter\n      steps:\n      - serviceUrl: ${svc}\n        weight: 100\n      - serviceUrl: ${svc}\n`), "graphs.g.nodes.root.steps[1].weight: InferenceGraph[g] Node[root] Route[] missing the 'Weight'"],
    ["an unknown nodeName", manifest("g", "    root:\n      routerType: Sequence\n      steps:\n      - nodeName: ghost\n"), 'graphs.g.nodes.root.steps[0].nodeName: unknown node "ghost"'],
    ["a cycle", manifest("g", `    root:\n      routerType: Sequence\n      steps:\n      - nodeName: a\n    a:\n      routerType: Sequence\n      steps:\n      - nodeName: root\n`), "graphs.g.nodes.root: cycle through nodeName links: root -> a -> root"],
    ["an unparseable condition", manifest("g", `    root:\n      routerType: Switch\n      steps:\n      - serviceUrl: ${svc}\n        condition: "instances.#(modelId==1"\n`), "graphs.g.nodes.root.steps[0].condition: invalid GJSON condition"],
    ["a condition on a Sequence's first step", manifest("g", `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${svc}\n        condition: "@this"\n`), "graphs.g.nodes.root.steps[0].condition: a condition on a Sequence's first step"],
    ["an unknown serviceName", manifest("g", "    root:\n      routerType: Sequence\n      steps:\n      - serviceName: sklearn-iris\n"), 'graphs.g.nodes.root.steps[0].serviceName: unknown service "sklearn-iris" (add it under services)'],
    ["a bandit whose n_branches is not its step count", manifest("g", `    root:\n      routerType: Router\n      router: { type: epsilon_greedy, n_branches: 3 }\n      steps:\n      - serviceUrl: ${svc}\n      - serviceUrl: ${svc}\n`), "graphs.g.nodes.root.router.n_branches: must equal the number of steps (2)"],
    ["a name KServe refuses", manifest("Abc-123", `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${svc}\n`), 'metadata.name: The InferenceGraph "Abc-123" is invalid'],
  ])("refuses %s", async (_what, yaml, expected) => {
    const issues = await rejected(yaml);
    expect(issues.some((i) => i.startsWith(expected)), issues.join("\n")).toBe(true);
  });

  it("refuses a graph deeper than 16 nodes", async () => {
    const nodes = Array.from({ length: 18 }, (_, i) => `    ${i === 0 ? "root" : `n${i}`}:\n      routerType: Sequence\n      steps:\n      - ${i === 17 ? `serviceUrl: ${svc}` : `nodeName: n${i + 1}`}\n`).join("");
    const issues = await rejected(manifest("deep", nodes));
    expect(issues).toContain("graphs.deep.nodes.root: graph is 18 nodes deep; at most 16");
  });
});

describe("graphs as targets", () => {
  it("answers on the graph's path and any subpath; serve accepts a file of InferenceGraph documents only", async () => {
    const m = await model({ predictions: [1] });
    const name = uniqueName("only");
    await publish(manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${m.url}\n`));
    for (const path of [`/graphs/${name}`, `/graphs/${name}/v1/models/x:predict`]) {
      const res = await post(path, { instances: [[1]] });
      expect([res.status, await res.json()]).toEqual([200, { predictions: [1] }]);
    }
    const unknown = await post("/graphs/no-such-graph", {});
    expect([unknown.status, await unknown.json()]).toEqual([404, { error: "Failed to process request", cause: 'no InferenceGraph named "no-such-graph"' }]);
    expect((await routerFetch(`/graphs/${name}`, { method: "GET" })).status).toBe(405);
    const routing = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { graphs: Record<string, { path: string; nodes: Record<string, { routerType: string; steps: { target: string }[] }> }> };
    expect(routing.graphs[name]).toMatchObject({ path: `/graphs/${name}`, nodes: { root: { routerType: "Sequence", steps: [{ target: m.url }] } } });
  });

  it("resolves serviceName through services with KServe's v1/v2 paths", async () => {
    const [v1, v2] = [await model({ predictions: ["v1"] }), await model({ outputs: ["v2"] })];
    const name = uniqueName("services");
    await publish(
      `services:\n  sklearn-iris: { url: "${v1.url}" }\n  xgb: { url: "${v2.url}", protocol: v2, model: xgboost-iris }\n---\n` +
        manifest(name, `    root:\n      routerType: Ensemble\n      steps:\n      - serviceName: sklearn-iris\n        name: a\n      - serviceName: xgb\n        name: b\n`),
    );
    const res = await post(`/graphs/${name}`, { instances: [[1]] });
    expect(await res.json()).toEqual({ a: { predictions: ["v1"] }, b: { outputs: ["v2"] } });
    expect((await v1.stats()).recent[0]!.path).toBe("/v1/models/sklearn-iris:predict");
    expect((await v2.stats()).recent[0]!.path).toBe("/v2/models/xgboost-iris/infer");
  });

  it("is the target of a model name on the OpenAI and KServe v2 endpoints", async () => {
    const m = await model({ id: "cmpl-1", choices: [{ message: { content: "from graph" } }] });
    const name = uniqueName("modelgraph");
    await publish(`models:\n  graph-chat: { graph: ${name} }\n---\n` + manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${m.url}\n`));
    const res = await chat("graph-chat");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("from graph");
    expect(JSON.parse((await m.stats()).recent[0]!.body).model).toBe("graph-chat");
    const v2 = await post("/v2/models/graph-chat/infer", { inputs: [] });
    expect(v2.status).toBe(200);
    const models = (await (await routerFetch("/v1/models")).json()) as { data: { id: string }[] };
    expect(models.data.map((d) => d.id)).toContain("graph-chat");
  });

  it("a graph failure on the OpenAI surface is an OpenAI error object", async () => {
    const name = uniqueName("fails");
    await publish(`models:\n  sw: { graph: ${name} }\n---\n` + manifest(name, `    root:\n      routerType: Switch\n      steps:\n      - serviceUrl: http://127.0.0.1:9\n        condition: "[@this].#(never==true)"\n`));
    const res = await chat("sw");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "graph_error", message: expect.stringContaining("None of the routes matched") });
  });

  it("a Hard step's error answer reaches a model's client in that surface's shape with its status and words; on the graph's path as it came", async () => {
    const failing = await model({ error: 'Expected "inputs" in request body' }, 400);
    const name = uniqueName("hard");
    await publish(`models:\n  hard-chat: { graph: ${name} }\n---\n` + manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${failing.url}\n        dependency: Hard\n`));
    const openai = await chat("hard-chat");
    expect(openai.status).toBe(400);
    expect(((await openai.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "graph_error", message: `graph '${name}': a step answered 400: Expected "inputs" in request body` });
    const anthropic = await post("/v1/messages", { model: "hard-chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    expect(anthropic.status).toBe(400);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error", message: expect.stringContaining('a step answered 400: Expected "inputs"') } });
    const own = await post(`/graphs/${name}`, {});
    expect([own.status, await own.json()]).toEqual([400, { error: 'Expected "inputs" in request body' }]); // KServe's router: the step's own status and body
  });
});

describe("a graph step on a pool whose usable replicas all speak Anthropic", () => {
  it("fails saying so, not that no replica could be tried, and calls none", async () => {
    const [claude, chatReplica] = [await model({ type: "message" }), await model({ choices: [] })];
    const name = uniqueName("drained");
    await publish(`pools:\n  ${name}:\n    replicas:\n      - { id: claude, url: "${claude.url}", dialect: anthropic }\n      - { id: chat, url: "${chatReplica.url}", weight: 0 }\n---\n` + manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - { pool: ${name}, path: /v1/chat/completions }\n`));
    const res = await post(`/graphs/${name}`, {});
    expect(res.status).toBe(500);
    expect(((await res.json()) as { cause: string }).cause).toContain("the replicas it could use speak Anthropic's Messages API");
    expect((await claude.stats()).requests + (await chatReplica.stats()).requests).toBe(0);
  });
});

describe("per-step timeout, retries, mirror, streaming", () => {
  it("times a step out at timeoutMs with a 500 naming the step URL", async () => {
    const hung = await server({ hang: true, reply: { body: {} } }, "hung");
    const name = uniqueName("timeout");
    await publish(manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${hung.url}\n        timeoutMs: 150\n`));
    const started = Date.now();
    const res = await post(`/graphs/${name}`, {});
    expect(res.status).toBe(500);
    expect(((await res.json()) as { cause: string }).cause).toBe(`Post "${hung.url}": no answer within 150 ms`);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("retries a step after a 5xx up to `retries` times", async () => {
    const flaky = await model({ detail: "down" }, 503);
    const name = uniqueName("retry");
    await publish(manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${flaky.url}\n        retries: 2\n`));
    const res = await post(`/graphs/${name}`, {});
    expect(res.status).toBe(503);
    expect((await flaky.stats()).requests).toBe(3);
  });

  it("copies a percentage of requests to a mirror step, fire-and-forget, without changing the answer", async () => {
    const [main, shadow] = [await model({ predictions: ["main"] }), await model({ predictions: ["shadow"] })];
    const name = uniqueName("mirror");
    await publish(manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${main.url}\n      - serviceUrl: ${shadow.url}\n        mirror: 100\n`));
    for (let i = 0; i < 5; i++) expect(await (await post(`/graphs/${name}`, { n: i })).json()).toEqual({ predictions: ["main"] });
    await expect.poll(async () => (await shadow.stats()).requests, { timeout: 2000 }).toBe(5);
  });

  it("streams when the graph ends in a single upstream call (first chunk before the last)", async () => {
    const streaming = await server({ streamChunks: 4, chunkIntervalMs: 250 }, "sse");
    const name = uniqueName("stream");
    await publish(manifest(name, `    root:\n      routerType: Splitter\n      steps:\n      - serviceUrl: ${streaming.url}/v1/chat/completions\n        weight: 100\n`));
    const started = Date.now();
    const res = await post(`/graphs/${name}`, { model: "m", stream: true, messages: [] });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    await readWithin(reader, 10_000, "the graph's first SSE chunk");
    const first = Date.now() - started;
    let text = "";
    for (;;) {
      const { done, value } = await readWithin(reader, 10_000, "the rest of the graph's SSE stream");
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(first).toBeLessThan(Date.now() - started - 500);
    expect(text).toContain("[DONE]");
  });
});

describe("Seldon-style Router nodes", () => {
  const children = async (): Promise<[FleetServer, FleetServer]> => [await model({ predictions: ["A"] }), await model({ predictions: ["B"] })];
  const routerGraph = (name: string, router: string, a: FleetServer, b: FleetServer) =>
    manifest(name, `    root:\n      routerType: Router\n      router: ${router}\n      steps:\n      - name: a\n        serviceUrl: ${a.url}\n      - name: b\n        serviceUrl: ${b.url}\n`);

  it("an external router's answer picks the child ({data:{ndarray:[[1]]}}); meta.routing reports it", async () => {
    const [a, b] = await children();
    const router = await model({ data: { ndarray: [[1]] } });
    const name = uniqueName("external");
    await publish(routerGraph(name, `{ type: external, serviceUrl: "${router.url}/route" }`, a, b));
    const res = await post(`/graphs/${name}`, { data: { ndarray: [[1, 2]] } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ predictions: ["B"], meta: { routing: { root: 1 }, graph: name } });
    expect(res.headers.get("x-switchyard-routing")).toBe('{"root":1}');
    expect(JSON.parse((await router.stats()).recent[0]!.body)).toEqual({ data: { ndarray: [[1, 2]] } });
  });

  it("-1 routes to all children like an Ensemble, -2 returns the request, out of range is a clear 502", async () => {
    const [a, b] = await children();
    const router = await model([-1]);
    const name = uniqueName("routes");
    await publish(routerGraph(name, `{ type: external, serviceUrl: "${router.url}" }`, a, b));
    expect(await (await post(`/graphs/${name}`, {})).json()).toEqual({ a: { predictions: ["A"] }, b: { predictions: ["B"] }, meta: { routing: { root: -1 }, graph: name } });
    await router.setBehaviour({ reply: { body: [-2] } });
    expect(await (await post(`/graphs/${name}`, { echo: true })).json()).toEqual({ echo: true, meta: { routing: { root: -2 }, graph: name } });
    await router.setBehaviour({ reply: { body: { data: { ndarray: [5] } } } });
    const bad = await post(`/graphs/${name}`, {});
    expect(bad.status).toBe(502);
    expect(((await bad.json()) as { cause: string }).cause).toContain("chose route 5, but the node has 2 children");
  });

  // Statistical, over HTTP: 400 requests, false failure 1e-4 (chi-square, 1 df). It checks
  // that ratioA reaches the draw, and which child is A: a 50/50 split or swapped children
  // (70/30) fail it with a miss rate < 1e-5, but a split 5 points off (35/65) passes 95% of
  // the time. The precision is abTestArm's unit test (test/unit/bandits.test.ts).
  it("RANDOM_ABTEST splits by ratioA", async () => {
    const [a, b] = await children();
    const name = uniqueName("abtest");
    await publish(routerGraph(name, "{ type: random_abtest, ratioA: 0.3 }", a, b));
    let toA = 0;
    const n = 400;
    for (let i = 0; i < n; i += 50) {
      const answers = await Promise.all(Array.from({ length: 50 }, async () => ((await (await post(`/graphs/${name}`, {})).json()) as { predictions: string[] }).predictions[0]));
      toA += answers.filter((x) => x === "A").length;
    }
    expect(chiSquare([toA, n - toA], [0.3, 0.7], n), `A=${toA}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("an epsilon-greedy router learns from POST /feedback and converges on the rewarded branch", async () => {
    const [a, b] = await children();
    const name = uniqueName("bandit");
    await publish(routerGraph(name, "{ type: epsilon_greedy, n_branches: 2, epsilon: 0.1, best_branch: 0 }", a, b));
    // Branch b (1) pays 0.9 per request, branch a (0) pays 0.1: fractional rewards must count.
    const picks: number[] = [];
    for (let i = 0; i < 200; i++) {
      const response = (await (await post(`/graphs/${name}`, { data: { ndarray: [[i]] } })).json()) as { meta: { routing: { root: number } } };
      const arm = response.meta.routing.root;
      picks.push(arm);
      const feedback = await post("/feedback", { request: { data: { ndarray: [[i]] } }, response, reward: arm === 1 ? 0.9 : 0.1 });
      expect(feedback.status).toBe(200);
    }
    const late = picks.slice(100);
    // With epsilon 0.1 the best branch gets 90% once learnt; 80% of the last 100 is a bound that holds with a wide margin.
    expect(late.filter((arm) => arm === 1).length).toBeGreaterThanOrEqual(80);
  });

  it("refuses a row count it cannot trust and a reward outside [0, 1] with 400 in Seldon's status shape, leaving the arms as they were", async () => {
    const [a, b] = await children();
    const name = uniqueName("rows");
    await publish(routerGraph(name, "{ type: epsilon_greedy, n_branches: 2, epsilon: 0.1, best_branch: 0 }", a, b));
    const response = { meta: { routing: { root: 1 }, graph: name } };
    const bandit = env.BANDIT.getByName(banditObjectName(name, "root"));
    // Feedback reaches the node's object in the isolate's next batch; GET /metrics sends this isolate's batches first.
    const flushed = async () => (await metricsText(), bandit.snapshot());
    expect((await post("/feedback", { request: { data: { ndarray: [[1], [2], [3]] } }, response, reward: 1 })).status).toBe(200);
    const before = await flushed();
    expect(before!.arms[1]).toEqual({ tries: 3, successes: 3 });

    const tensor = (t: Record<string, unknown>) => ({ request: { data: { tensor: t } }, response, reward: 0 });
    const refused: [body: unknown, info: RegExp][] = [
      [tensor({ shape: [1e300] }), /^request\.data\.tensor\.shape must be a non-empty list of whole numbers >= 0$/],
      [tensor({ shape: [1e300], values: [0] }), /whole numbers/],
      [tensor({ shape: [-1] }), /whole numbers/],
      [tensor({ shape: [2.5] }), /whole numbers/],
      [tensor({ shape: "3" }), /whole numbers/],
      [tensor({ shape: [] }), /whole numbers/],
      [tensor({ shape: [5000] }), /^request has 5000 rows; feedback credits at most 1000 per call$/],
      [tensor({ shape: [3, 2], values: [1, 2, 3] }), /^request\.data\.tensor\.shape does not match its 3 values$/],
      [{ request: { data: { ndarray: Array.from({ length: 1001 }, (_, i) => [i]) } }, response, reward: 1 }, /^request has 1001 rows/],
      [{ request: {}, response, reward: 1.5 }, /^reward must be a number in \[0, 1\]/],
      [{ request: {}, response, reward: -0.1 }, /^reward must be a number in \[0, 1\]/],
      [`{"request":{},"response":${JSON.stringify(response)},"reward":1e999}`, /^reward must be a number in \[0, 1\]/],
    ];
    for (const [body, info] of refused) {
      const res = await post("/feedback", body);
      const status = ((await res.json()) as { status: { code: number; info: string; status: string } }).status;
      expect({ http: res.status, code: status.code, status: status.status }, JSON.stringify(body).slice(0, 120)).toEqual({ http: 400, code: 400, status: "FAILURE" });
      expect(status.info).toMatch(info);
    }
    expect(await flushed()).toEqual(before);

    // A shape that agrees with its values is the row count; an empty request is one row.
    expect((await post("/feedback", tensor({ shape: [2, 2], values: [1, 2, 3, 4] }))).status).toBe(200);
    expect((await post("/feedback", { request: { data: { ndarray: [] } }, response, reward: 1 })).status).toBe(200);
    expect((await flushed())!.arms[1]).toEqual({ tries: 6, successes: 4 });
  });

  it("refuses feedback without meta.routing or a numeric reward, in Seldon's status shape", async () => {
    const noRouting = await post("/feedback", { request: {}, response: {}, reward: 1 });
    expect(noRouting.status).toBe(400);
    expect(((await noRouting.json()) as { status: { status: string } }).status.status).toBe("FAILURE");
    expect((await post("/feedback", { response: { meta: { routing: { root: 0 } } }, reward: "1" })).status).toBe(400);
    expect((await post("/feedback", "{nope")).status).toBe(400);
  });
});
