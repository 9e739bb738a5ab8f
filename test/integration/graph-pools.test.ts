/**
 * Graph steps that target a pool (`pool` + `path` on a step, or a `services` entry with
 * `pool`): the step goes through the pool as a model's request does, so graph traffic
 * gets replica picking, fallback, circuits and load, through the one attempt engine.
 */
import { describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, post, publish, routerFetch } from "../support/router";
import { poolAfter, poolStub, poolWhen } from "../support/state";

const servers = serversClosedAfterEach();
const unique = (base: string) => `${base}-${crypto.randomUUID().slice(0, 6)}`;

/** A config with one pool and one graph over it. */
function graphOnPool(pool: string, replicas: { id: string; url: string; weight?: number }[], graph: string, nodes: string, extra = "") {
  const lines = replicas.map((r) => `      - { id: ${r.id}, url: "${r.url}", weight: ${r.weight ?? 1} }`).join("\n");
  return `pools:
  ${pool}:
    circuit: { consecutive_failures: 2, cooldown_ms: 600000, max_cooldown_ms: 600000 }
    replicas:
${lines}
${extra}routing: { affinity: { enabled: false } }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${graph}
spec:
  nodes:
${nodes}`;
}

describe("a step with pool and path", () => {
  it("is sent to the pool's replicas on that path, and a failing replica falls back within the step", async () => {
    const [bad, good] = await servers([{ reply: { status: 500, body: { error: "down" } } }, { reply: { body: { predictions: [7] } } }], "gp-");
    const [pool, graph] = [unique("gp"), unique("graph")];
    await publish(
      graphOnPool(pool, [{ id: "bad", url: bad!.url, weight: 1000 }, { id: "good", url: good!.url }], graph, `    root:
      routerType: Sequence
      steps:
      - { name: classify, pool: ${pool}, path: /v1/models/iris:predict }
`),
    );
    const res = await post(`/graphs/${graph}`, { instances: [[1, 2]] });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ predictions: [7] });
    expect(res.headers.get("x-switchyard-route")).toBe("root/classify");
    expect((await good!.stats()).recent.at(-1)!.path).toBe("/v1/models/iris:predict");
    expect((await bad!.stats()).recent.at(-1)!.path).toBe("/v1/models/iris:predict"); // tried first (weight 1000), then fallback

    // The pool's circuits see graph traffic: after two failures "bad" is open and no longer tried.
    await post(`/graphs/${graph}`, { instances: [[1, 2]] });
    const snap = await poolAfter(pool, 2);
    expect(snap.replicas.find((r) => r.id === "bad")!.circuit).toBe("open");
    expect(snap.requests.every((s) => s.labels.model === `graph:${graph}`)).toBe(true);
    const before = (await bad!.stats()).requests;
    for (let i = 0; i < 3; i++) expect((await post(`/graphs/${graph}`, { instances: [[1, 2]] })).status).toBe(200);
    expect((await bad!.stats()).requests).toBe(before);
  });

  it("counts its request in flight at the pool's object while the step runs", async () => {
    const [slow] = await servers([{ reply: { body: { predictions: [1] } }, latencyMs: 1_500 }], "gpload-");
    const [pool, graph] = [unique("gpl"), unique("graphl")];
    await publish(graphOnPool(pool, [{ id: "slow", url: slow!.url }], graph, `    root:\n      routerType: Sequence\n      steps:\n      - { pool: ${pool}, path: /v2/models/m/infer }\n`));
    const pending = post(`/graphs/${graph}`, { inputs: [] });
    const loaded = await poolWhen(pool, (s) => s.replicas[0]!.inflight === 1);
    expect(loaded.replicas[0]!.inflight).toBe(1);
    expect((await pending).status).toBe(200);
    expect((await poolWhen(pool, (s) => s.replicas[0]!.inflight === 0)).replicas[0]!.inflight).toBe(0);
  });

  it("answers the step's failure when every replica fails, naming replicas, never URLs", async () => {
    const [down] = await servers([{ reply: { status: 503, body: {} } }], "gpdown-");
    const [pool, graph] = [unique("gpd"), unique("graphd")];
    await publish(graphOnPool(pool, [{ id: "down", url: down!.url }], graph, `    root:\n      routerType: Sequence\n      steps:\n      - { name: only, pool: ${pool}, path: /v1/models/m:predict, dependency: Hard }\n`));
    const res = await post(`/graphs/${graph}`, {});
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: string; cause: string };
    expect(body.cause).toContain('replica "down" answered 503');
    expect(body.cause).not.toContain(down!.url);
  });
});

describe("a service with pool", () => {
  it("resolves serviceName to the pool, on KServe's path for the service's protocol and model", async () => {
    const [replica] = await servers([{ reply: { body: { outputs: [] } } }], "svcpool-");
    const [pool, graph] = [unique("sp"), unique("graphs")];
    await publish(
      graphOnPool(
        pool,
        [{ id: "r", url: replica!.url }],
        graph,
        `    root:\n      routerType: Sequence\n      steps:\n      - serviceName: xgb\n`,
        `services:\n  xgb: { pool: ${pool}, protocol: v2, model: xgboost-iris }\n`,
      ),
    );
    expect((await post(`/graphs/${graph}`, { inputs: [] })).status).toBe(200);
    expect((await replica!.stats()).recent.at(-1)!.path).toBe("/v2/models/xgboost-iris/infer");
    expect((await poolStub(pool).snapshot()).pool).toBe(pool);
  });
});

describe("validation", () => {
  async function issues(yaml: string) {
    const res = await routerFetch("/admin/config", { method: "PUT", headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: yaml });
    expect(res.status).toBe(400);
    return ((await res.json()) as { issues: { path: string; message: string }[] }).issues;
  }
  const base = (steps: string, services = "") =>
    `pools:\n  p:\n    replicas: [{ id: a, url: "http://127.0.0.1:9" }]\n${services}---\napiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: v\nspec:\n  nodes:\n    root:\n      routerType: Sequence\n      steps:\n${steps}`;

  it("names the failing path for each mistake", async () => {
    expect(await issues(base("      - { pool: nowhere, path: /x }\n"))).toEqual([{ path: "graphs.v.nodes.root.steps[0].pool", message: 'unknown pool "nowhere"' }]);
    expect((await issues(base("      - { pool: p }\n")))[0]).toMatchObject({ path: "graphs.v.nodes.root.steps[0].path", message: expect.stringContaining("is required with pool") });
    expect((await issues(base("      - { pool: p, path: /v1/x?token=1 }\n")))[0]).toMatchObject({ path: "graphs.v.nodes.root.steps[0].path" });
    expect((await issues(base("      - { pool: p, path: /x, retries: 2 }\n")))[0]).toMatchObject({ path: "graphs.v.nodes.root.steps[0].retries" });
    expect((await issues(base("      - { pool: p, path: /x, serviceUrl: \"http://127.0.0.1:9\" }\n")))[0]!.message).toContain("more than one of");
    expect((await issues(base("      - { serviceName: s }\n", "services:\n  s: { url: \"http://127.0.0.1:9\", pool: p }\n")))[0]).toMatchObject({ path: "services.s", message: "needs exactly one of url and pool" });
    expect((await issues(base("      - { serviceName: s }\n", "services:\n  s: { pool: gone }\n")))[0]).toMatchObject({ path: "services.s.pool" });
  });
});
