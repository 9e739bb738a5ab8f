/**
 * A limited graph request is charged what its steps used: the sum of every step's
 * reported usage, each step priced as the model it called (docs/limits.md, "What a request
 * does"). Fake upstreams on two pools report different usage, so a charge of one step
 * only, or of the prediction, shows.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { limitsObjectName } from "../../src/app/state/object-names";
import type { LimitSnapshot } from "../../src/core/limits/wire";
import { serversClosedAfterEach } from "../support/fleet";
import { KEY } from "../support/limits";
import { ADMIN_TOKEN, publish, routerFetch } from "../support/router";
import { earlyInMinute } from "../support/state";

let time: ReturnType<typeof earlyInMinute> | undefined;
beforeEach(() => {
  time = earlyInMinute();
});
afterEach(() => time?.restore());

const servers = serversClosedAfterEach();
const auth = { authorization: `Bearer ${KEY}` };
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

const USAGE_A = { prompt_tokens: 10, completion_tokens: 5 }; // on pool pa (model ma: 1,000 / 2,000 per million): 0.02
const USAGE_B = { prompt_tokens: 100, completion_tokens: 50 }; // on pool pb (model mb: 3,000 / 4,000 per million): 0.5
const completion = (usage: object, text: string) => ({ id: "cmpl-1", object: "chat.completion", model: "upstream", choices: [{ index: 0, message: { role: "assistant", content: text } }], usage });

/** Two priced pool models, the test key named `name`, a tokens and spend limit on it, and a graph over the two pools. */
function graphConfig(a: string, b: string, name: string, graph: string, node: string) {
  return `models:
  ma: { pool: pa, pricing: { input: 1000, output: 2000 } }
  mb: { pool: pb, pricing: { input: 3000, output: 4000 } }
pools:
  pa: { replicas: [{ id: a, url: "${a}" }] }
  pb: { replicas: [{ id: b, url: "${b}" }] }
auth:
  keys:
    - { name: ${name}, key: "\${TEST_CLIENT_KEY}" }
limits:
  - { key: ${name}, requests_per_minute: 100, tokens_per_minute: 100000, spend: { amount: 100, window: day } }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${graph}
spec:
  nodes:
    root:
${node}`;
}

const steps = (type: string, data = "") => `      routerType: ${type}
      steps:
      - { name: first, pool: pa, path: /v1/chat/completions${data} }
      - { name: second, pool: pb, path: /v1/chat/completions${data} }
`;

const snapshotOf = (bucket: string): Promise<LimitSnapshot> => (env.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket)) as unknown as { snapshot(): Promise<LimitSnapshot> }).snapshot();

type Standing = { spent: number };
/** GET /admin/usage for the key once its tokens reach `tokens` (reports reach the object within a sync). */
async function usageWhen(name: string, tokens: number | ((usage: Record<string, Standing>) => boolean), timeoutMs = 4_000): Promise<Record<string, Standing>> {
  const ready = typeof tokens === "number" ? (usage: Record<string, Standing>) => usage.tokens!.spent === tokens : tokens;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await routerFetch(`/admin/usage?key=${name}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
    const view = (await res.json()) as { buckets: { bucket: string; usage: Record<string, Standing> }[] };
    const usage = view.buckets.find((b) => b.bucket === `key=${name}`)!.usage;
    if (ready(usage) || Date.now() > until) return usage;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function run(node: string, body: unknown) {
  const [a, b] = await servers([{ reply: { body: completion(USAGE_A, "from a") } }, { reply: { body: completion(USAGE_B, "from b") } }], "lg");
  const name = unique("graphs");
  const graph = unique("lg");
  await publish(graphConfig(a!.url, b!.url, name, graph, node));
  const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(body) });
  return { res, name, a: a!, b: b! };
}

const INPUT = { messages: [{ role: "user", content: "hi" }], max_tokens: 20 };
const BOTH_TOKENS = 10 + 5 + 100 + 50;
const BOTH_SPEND = 10 * 0.001 + 5 * 0.002 + 100 * 0.003 + 50 * 0.004;

describe("a limited graph is charged each step's usage", () => {
  it("a two-step sequence: the sum of both steps' reported tokens, each priced as its pool's model, one request", async () => {
    const { res, name, b } = await run(steps("Sequence", ", data: $response"), INPUT);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ choices: [{ message: { content: "from b" } }] });
    expect(res.headers.get("x-ratelimit-limit-tokens")).toBe("100000");
    expect(((await b.stats()).recent.at(-1) as { path: string }).path).toBe("/v1/chat/completions");
    const usage = await usageWhen(name, BOTH_TOKENS);
    expect(usage.tokens!.spent).toBe(BOTH_TOKENS);
    expect(usage.spend!.spent).toBeCloseTo(BOTH_SPEND, 9);
    expect(usage.requests!.spent).toBe(1);
  });

  it("an ensemble: the sum of both branches", async () => {
    const { res, name } = await run(steps("Ensemble"), INPUT);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ first: { usage: USAGE_A }, second: { usage: USAGE_B } });
    const usage = await usageWhen(name, BOTH_TOKENS);
    expect(usage.tokens!.spent).toBe(BOTH_TOKENS);
    expect(usage.spend!.spent).toBeCloseTo(BOTH_SPEND, 9);
    expect(usage.requests!.spent).toBe(1);
  });

  it("a step whose body names a priced model is priced as that model, whatever pool it goes to", async () => {
    const { res, name } = await run(steps("Ensemble"), { ...INPUT, model: "mb" });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const usage = await usageWhen(name, BOTH_TOKENS);
    expect(usage.spend!.spent).toBeCloseTo(10 * 0.003 + 5 * 0.004 + 100 * 0.003 + 50 * 0.004, 9);
  });

  it("a graph that fails after a step answered is still charged that step's usage", async () => {
    const [a, down] = await servers([{ reply: { body: completion(USAGE_A, "from a") } }, { reply: { status: 503, body: {} } }], "lgf");
    const name = unique("graphf");
    const graph = unique("lgf");
    await publish(graphConfig(a!.url, down!.url, name, graph, steps("Sequence", ", data: $response, dependency: Hard")));
    const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(INPUT) });
    expect(res.status).toBe(500);
    await res.arrayBuffer();
    const usage = await usageWhen(name, 15);
    expect(usage.tokens!.spent).toBe(15);
    expect(usage.spend!.spent).toBeCloseTo(10 * 0.001 + 5 * 0.002, 9);
    expect((await snapshotOf(`key=${name}`)).dims.requests!.spent).toBe(1);
  });
});

describe("a step whose upstream answers an error", () => {
  it("is charged what the error reports, here nothing: no estimate for an answer no provider bills", async () => {
    const [a, refusing] = await servers([{ reply: { body: completion(USAGE_A, "from a") } }, { reply: { status: 400, body: { error: { message: "bad request", type: "invalid_request_error" } } } }], "lge");
    const name = unique("graphe");
    const graph = unique("lge");
    await publish(graphConfig(a!.url, refusing!.url, name, graph, steps("Ensemble")));
    const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ ...INPUT, messages: [{ role: "user", content: "x".repeat(1_000) }] }) });
    await res.arrayBuffer();
    expect(await refusing!.stats().then((s) => s.byPath["/v1/chat/completions"])).toBe(1);
    const usage = await usageWhen(name, 15);
    expect(usage.tokens!.spent).toBe(15); // step a's reported use alone
    expect(usage.spend!.spent).toBeCloseTo(10 * 0.001 + 5 * 0.002, 9);
  });
});

describe("a streamed graph answer", () => {
  it("is charged once its last step's stream has ended, from every step's usage chunk", async () => {
    const [a, b] = await servers([{ answer: { content: "from a", usage: USAGE_A } }, { answer: { content: "from b", usage: USAGE_B } }], "lgs");
    const name = unique("graphs");
    const graph = unique("lgs");
    await publish(graphConfig(a!.url, b!.url, name, graph, steps("Sequence")));
    const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ ...INPUT, stream: true, stream_options: { include_usage: true } }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const text = await res.text();
    expect(text).toContain("[DONE]");
    const usage = await usageWhen(name, BOTH_TOKENS);
    expect(usage.tokens!.spent).toBe(BOTH_TOKENS);
    expect(usage.spend!.spent).toBeCloseTo(BOTH_SPEND, 9);
  });
});

describe("a streamed graph answer whose client did not ask for usage", () => {
  it("has each step asked for its usage chunk all the same (charged what the upstreams counted), and the client's stream carries none", async () => {
    const [a, b] = await servers([{ answer: { content: "from a", usage: USAGE_A } }, { answer: { content: "from b", usage: USAGE_B } }], "lgu");
    const name = unique("graphu");
    const graph = unique("lgu");
    await publish(graphConfig(a!.url, b!.url, name, graph, steps("Sequence")));
    const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ ...INPUT, stream: true }) });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain("[DONE]");
    expect(text).not.toContain('"usage"');
    for (const server of [a!, b!]) expect(JSON.parse((await server.stats()).recent.at(-1)!.body)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const usage = await usageWhen(name, BOTH_TOKENS);
    expect(usage.tokens!.spent).toBe(BOTH_TOKENS);
    expect(usage.spend!.spent).toBeCloseTo(BOTH_SPEND, 9);
  });
});

describe("a step whose answer breaks off", () => {
  it("read whole (not the graph's last step): the graph's own 500, counted and limited as an answer, charged what passed", async () => {
    const [a, b] = await servers([{ answer: { content: "from a, at length", usage: USAGE_A }, streamChunks: 10, streamCutAfter: 2 }, { answer: { content: "from b", usage: USAGE_B } }], "lgc");
    const name = unique("graphc");
    const graph = unique("lgc");
    await publish(graphConfig(a!.url, b!.url, name, graph, steps("Sequence", ", dependency: Hard")));
    const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ ...INPUT, stream: true }) });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { cause: string };
    expect(body.cause).toContain("step root/first: its answer broke off while it was read");
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("100"); // the graph answered: not the router's internal_error
    expect((await b!.stats()).byPath["/v1/chat/completions"] ?? 0).toBe(0);
    const usage = await usageWhen(name, (u) => u.requests!.spent >= 1);
    expect(usage.requests!.spent).toBe(1);
    expect(usage.tokens!.spent).toBeGreaterThan(0); // step first's prompt and the output that passed, estimated
    expect(usage.tokens!.spent).toBeLessThan(15 + 150);
  });

  it("before any of it was delivered (a whole answer cut mid-body): no answer, no tokens", async () => {
    const [a, b] = await servers([{ reply: { body: completion(USAGE_A, "from a") } }, { answer: { content: "from b", usage: USAGE_B }, jsonCutAfterBytes: 20 }], "lgj");
    const name = unique("graphj");
    const graph = unique("lgj");
    await publish(graphConfig(a!.url, b!.url, name, graph, steps("Sequence", ", data: $request")));
    const res = await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(INPUT) });
    expect(res.status).toBe(500);
    await res.arrayBuffer();
    expect((await b!.stats()).byPath["/v1/chat/completions"]).toBe(1);
    const usage = await usageWhen(name, 15);
    expect(usage.tokens!.spent).toBe(15); // step first's reported use alone; the cut step is charged no estimate
    expect(usage.requests!.spent).toBe(1);
  });
});

describe("a graph is no way around a limit", () => {
  it("a graph model without prices is reserved at its steps' prices, so a spent budget refuses it", async () => {
    const [a, b] = await servers([{ reply: { body: completion(USAGE_A, "from a") } }, { reply: { body: completion(USAGE_B, "from b") } }], "lgb");
    const name = unique("spent");
    const graph = unique("lgb");
    // One request (0.52) spends the 0.5 budget; a graph reserving nothing would be admitted for ever after.
    await publish(graphConfig(a!.url, b!.url, name, graph, steps("Ensemble")).replace("spend: { amount: 100, window: day }", "spend: { amount: 0.5, window: day }").replace("models:\n", `models:\n  g: { graph: ${graph} }\n`));
    const chat = () => routerFetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify({ model: "g", ...INPUT }) });
    const first = await chat();
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    await usageWhen(name, BOTH_TOKENS);
    const after = [await chat(), await routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(INPUT) })];
    expect(after.map((r) => r.status)).toEqual([429, 429]);
    expect(await after[0]!.json()).toMatchObject({ error: { code: "insufficient_quota" } });
  });

  it("the graph's own path is limited by the rules of the models that name it, and by rules naming the graph", async () => {
    const [a, b] = await servers([{ reply: { body: completion(USAGE_A, "from a") } }, { reply: { body: completion(USAGE_B, "from b") } }], "lgp");
    const name = unique("path");
    const graph = unique("lgp");
    const yaml = graphConfig(a!.url, b!.url, name, graph, steps("Ensemble")).replace("models:\n", `models:\n  g: { graph: ${graph} }\n`);
    const own = () => routerFetch(`/graphs/${graph}`, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(INPUT) });
    await publish(yaml.replace("limits:\n", `limits:\n  - { key: ${name}, model: g, requests_per_minute: 1 }\n`));
    expect((await own()).status).toBe(200);
    const refused = await own();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-switchyard-limit")).toBe(`key=${name},model=g requests`);
    await publish(yaml.replace("limits:\n", `limits:\n  - { model: ${graph}, requests_per_minute: 1 }\n`)); // a rule may name the graph itself
    const [once, twice] = [await own(), await own()];
    expect([once.status, twice.status]).toEqual([200, 429]);
    expect(twice.headers.get("x-switchyard-limit")).toBe(`model=${graph} requests`);
  });

  it("a graph on unpriced pools whose body names a priced model is reserved at that model's prices; a graph is reserved its input alone, through a model too", async () => {
    const [a, c] = await servers([{ reply: { body: completion(USAGE_B, "from a") } }, { reply: { body: completion(USAGE_A, "from c") } }], "lgn");
    const name = unique("named");
    const graph = unique("lgn");
    await publish(`models:
  ma: { pool: pa, pricing: { input: 1000, output: 2000 } }
  mc: { pool: pc }
  gm: { graph: ${graph}, pricing: { input: 1000, output: 2000 } }
pools:
  pa: { replicas: [{ id: a, url: "${a!.url}" }] }
  pc: { replicas: [{ id: c, url: "${c!.url}" }] }
auth:
  keys:
    - { name: ${name}, key: "\${TEST_CLIENT_KEY}" }
limits:
  - { key: ${name}, spend: { amount: 0.25, window: day } }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${graph}
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - { pool: pc, path: /v1/chat/completions }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${graph}-unpriced
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - { pool: pc, path: /v1/chat/completions }
`);
    const post = (path: string, body: unknown) => routerFetch(path, { method: "POST", headers: { "content-type": "application/json", ...auth }, body: JSON.stringify(body) });
    // Through a priced model, a graph is reserved its input alone: one that held 4,096 output tokens at gm's prices (8.2) would not fit 0.25.
    const viaModel = await post("/v1/chat/completions", { model: "gm", messages: [{ role: "user", content: "hi" }] });
    expect(viaModel.status).toBe(200);
    await viaModel.arrayBuffer();
    // ma's answer (100 + 50 tokens: 0.2) leaves 0.05 of the budget: less than a priced reservation of this prompt.
    const spend = await post("/v1/chat/completions", { model: "ma", max_tokens: 60, messages: [{ role: "user", content: "hi" }] });
    expect(spend.status).toBe(200);
    await spend.arrayBuffer();
    await usageWhen(name, (usage) => usage.spend!.spent >= 0.2);
    const named = await post(`/graphs/${graph}-unpriced`, { model: "ma", messages: [{ role: "user", content: "x".repeat(400) }] });
    expect(named.status).toBe(429);
  });
});
