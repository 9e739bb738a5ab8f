/** Ids show in x-switchyard-replica, metric labels and object names: one made from a `${VAR}` is refused with its path. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";

const errorsOf = (text: string, vars: Record<string, unknown>, unresolvedVars: "error" | "defer" = "error") => {
  const result = loadConfig(text, vars, { unresolvedVars });
  return result.ok ? [] : result.errors.map((e) => `${e.path}: ${e.message}`);
};

describe("ids from ${VAR}", () => {
  it("refuses a replica id made from a ${VAR}, whole or in part, set or not (the CLI cannot see secrets)", () => {
    const pool = (id: string) => `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: "${id}", url: "http://10.0.0.1:8000" } ] } }\n`;
    const refused = ["pools.p.replicas[0].id: must not hold a ${VAR} reference (${REPLICA}): ids show in response headers, metric labels and object names"];
    expect(errorsOf(pool("${REPLICA}"), { REPLICA: "sk-live-secret" })).toEqual(refused);
    expect(errorsOf(pool("gpu-${REPLICA}"), { REPLICA: "sk-live-secret" })).toEqual(refused);
    expect(errorsOf(pool("${REPLICA:-gpu}"), {})).toEqual(refused);
    expect(errorsOf(pool("${REPLICA}"), {}, "defer")).toEqual(refused);
    expect(JSON.stringify(errorsOf(pool("${REPLICA}"), { REPLICA: "sk-live-secret" }))).not.toContain("sk-live-secret");
  });

  it("refuses RouteWise route ids and pool ids made from a ${VAR}", () => {
    const source = { url: "https://usage.example.com/v1/usage", used_path: "data.used", window_s: 3600 };
    const text = JSON.stringify({
      models: {
        m: {
          router: "routewise",
          routes: [
            { id: "${ROUTE}", provider_type: "quota", url: "https://q.example.com/v1", quota: { limit: 10 }, quota_source: source, quota_pool: "${POOL}" },
            { id: "c", provider_type: "concurrency", url: "https://c.example.com/v1", concurrency: { limit: 2 }, concurrency_pool: "slots-${POOL}" },
          ],
        },
      },
    });
    expect(errorsOf(text, { ROUTE: "r1", POOL: "team" })).toEqual([
      "models.m.routes[0].id: must not hold a ${VAR} reference (${ROUTE}): ids show in response headers, metric labels and object names",
      "models.m.routes[0].quota_pool: must not hold a ${VAR} reference (${POOL}): ids show in response headers, metric labels and object names",
      "models.m.routes[1].concurrency_pool: must not hold a ${VAR} reference (${POOL}): ids show in response headers, metric labels and object names",
    ]);
  });

  it("refuses a replica label made from a ${VAR}: the pool's object would store it", () => {
    const pool = (label: string) => `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: a, url: "http://10.0.0.1:8000", labels: [zone=us, "${label}"] } ] } }\n`;
    const refused = ["pools.p.replicas[0].labels[1]: must not hold a ${VAR} reference (${ZONE}): labels show in /routing and are stored by the pool's object"];
    expect(errorsOf(pool("colo=${ZONE}"), { ZONE: "sk-live-secret" })).toEqual(refused);
    expect(errorsOf(pool("${ZONE}"), {}, "defer")).toEqual(refused);
    expect(JSON.stringify(errorsOf(pool("colo=${ZONE}"), { ZONE: "sk-live-secret" }))).not.toContain("sk-live-secret");
    expect(errorsOf(pool("colo=SJC"), {})).toEqual([]);
  });

  it("refuses graph step names and bandit branch names made from a ${VAR}, in native graphs and InferenceGraph documents alike", () => {
    const native = (step: string, branch: string) => `models: { gm: { graph: g } }
graphs:
  g:
    nodes:
      root: { routerType: Sequence, steps: [ { serviceUrl: "http://10.0.0.1/a", name: "${step}" } ] }
      r:
        routerType: Router
        router: { type: epsilon_greedy, n_branches: 2, branch_names: ["${branch}", b] }
        steps: [ { serviceUrl: "http://10.0.0.1/b" }, { serviceUrl: "http://10.0.0.1/c" } ]
`;
    const vars = { STEP: "sk-live-secret", BRANCH: "sk-live-other" };
    expect(errorsOf(native("s-${STEP}", "br-${BRANCH}"), vars)).toEqual([
      "graphs.g.nodes.r.router.branch_names[0]: must not hold a ${VAR} reference (${BRANCH}): branch names are stored by the router's object and shown in /routing",
      "graphs.g.nodes.root.steps[0].name: must not hold a ${VAR} reference (${STEP}): step names show in x-switchyard-route, spans and metric labels",
    ]);
    expect(errorsOf(native("s-${STEP}", "a"), {}, "defer")).toHaveLength(1);
    expect(errorsOf(native("s1", "a"), {})).toEqual([]);
    const kserve = (name: string, step: string) => `apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata: { name: "${name}" }
spec:
  nodes:
    root: { routerType: Sequence, steps: [ { serviceUrl: "http://10.0.0.1/a", name: "${step}" } ] }
`;
    expect(errorsOf(kserve("g-${NAME}", "s-${STEP}"), { ...vars, NAME: "sk-live-name" })).toEqual([
      "metadata.name: must not hold a ${VAR} reference (${NAME}): a graph's name shows in its path, metric labels and object names",
      "spec.nodes.root.steps[0].name: must not hold a ${VAR} reference (${STEP}): step names show in x-switchyard-route, spans and metric labels",
    ]);
    expect(errorsOf(kserve("g1", "s1"), {})).toEqual([]);
    expect(JSON.stringify(errorsOf(kserve("g-${NAME}", "s-${STEP}"), { ...vars, NAME: "sk-live-name" }))).not.toContain("sk-live");
  });

  it("takes ids written as text", () => {
    expect(errorsOf(`models: { m: { pool: p } }\npools: { p: { replicas: [ { id: gpu-1, url: "\${URL}" } ] } }\n`, { URL: "http://10.0.0.1:8000" })).toEqual([]);
  });
});
