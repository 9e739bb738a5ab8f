/**
 * RouteWise's configuration: the reference file (examples/routewise.yaml) loads and sets
 * every option the schema has, each validation rule names the path it fails at, a
 * quota-bearing model draws the "uncalibrated" warning, and `describeConfig` shows the
 * routes.
 */
import { describe, expect, it } from "vitest";
import reference from "../../examples/routewise.yaml?raw";
import type { ConfigIssue, LoadResult } from "../../src/core/config/load";
import { loadConfig } from "../../src/core/config/load";
import { describeConfig } from "../../src/core/targets/describe";
import { ProviderRouteSchema, RouterParamsSchema } from "../../src/core/config/routewise-schema";
import { ModelSchema } from "../../src/core/config/schema";
import { parseYamlDocuments } from "../../src/core/config/yaml";

// --- Walking zod/mini schemas -------------------------------------------------------

interface Def {
  type: string;
  shape?: Record<string, unknown>;
  innerType?: unknown;
  in?: unknown;
  element?: unknown;
  options?: unknown[];
  entries?: Record<string, string>;
}

const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** optional / default / nullable / readonly ... wrap `innerType`; a pipe (api_key's "" -> undefined) reads its input schema. */
function unwrap(schema: unknown): unknown {
  for (;;) {
    const def = defOf(schema);
    if (def.innerType !== undefined) schema = def.innerType;
    else if (def.type === "pipe") schema = def.in;
    else return schema;
  }
}

/**
 * Every key an object schema can hold, and every key of the object schemas inside it, as
 * dotted paths (`quota_source.used_path`). Lists are transparent: a list of objects
 * contributes its element's keys under the list's own key.
 */
function schemaKeys(schema: unknown, prefix: string): string[] {
  const def = defOf(unwrap(schema));
  if (def.type === "array") return schemaKeys(def.element, prefix);
  if (def.type === "union") return (def.options ?? []).flatMap((option) => schemaKeys(option, prefix));
  if (def.type !== "object") return [];
  return Object.entries(def.shape!).flatMap(([key, inner]) => [`${prefix}${key}`, ...schemaKeys(inner, `${prefix}${key}.`)]);
}

/** The object schemas `schemaKeys` walks into: what the walk is trusted to reach. */
function objectPaths(schema: unknown, path: string): string[] {
  const def = defOf(unwrap(schema));
  if (def.type === "array") return objectPaths(def.element, path);
  if (def.type !== "object") return [];
  return [path, ...Object.entries(def.shape!).flatMap(([key, inner]) => objectPaths(inner, `${path}.${key}`))];
}

/** The keys a parsed YAML value sets, in the same form; a list's keys are the union over its items. */
function presentKeys(value: unknown, prefix: string, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) presentKeys(item, prefix, into);
  else if (value !== null && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) {
      into.add(`${prefix}${key}`);
      presentKeys(inner, `${prefix}${key}.`, into);
    }
  }
  return into;
}

/** The reference model as written (before defaults), straight from the YAML. */
function referenceModel(): Record<string, unknown> {
  const parsed = parseYamlDocuments(reference);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const models = (parsed.documents[0] as { models: Record<string, Record<string, unknown>> }).models;
  expect(Object.keys(models)).toEqual(["chat-fast"]);
  return models["chat-fast"]!;
}

const REQUIRED_OF_SCHEMAS = () => [...schemaKeys(RouterParamsSchema, "router_params."), ...schemaKeys(ProviderRouteSchema, "routes.")];

// --- Loading helpers ----------------------------------------------------------------

function loaded(result: LoadResult) {
  if (!result.ok) throw new Error(`expected a valid config, got ${JSON.stringify(result.errors)}`);
  return result;
}

function issuesOf(result: LoadResult): string[] {
  if (result.ok) throw new Error("expected the config to be refused");
  return result.errors.map((e: ConfigIssue) => `${e.path}: ${e.message}`);
}

const source = { url: "https://usage.example.com/v1/usage", used_path: "data.used", window_s: 3600 };
const onDemand = { id: "od", provider_type: "on_demand", url: "https://od.example.com/v1", pricing: { input: 0.000001, output: 0.000002 } };
const quota = { id: "q", provider_type: "quota", url: "https://q.example.com/v1", quota: { limit: 1000 }, quota_source: source };
const slots = { id: "c", provider_type: "concurrency", url: "https://c.example.com/v1", concurrency: { limit: 2 } };
const pools = { p: { replicas: [{ id: "r", url: "https://r.example.com" }] } };

/** A config (JSON is YAML) whose model `m` is RouteWise over `routes`, with `extra` merged into the model. */
function withRoutes(routes: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ models: { m: { router: "routewise", routes, ...extra } } });
}

/** Drops keys from a route (JSON.stringify leaves undefined out). */
function without<T extends object>(route: T, ...keys: string[]): T {
  return Object.fromEntries(Object.entries(route).filter(([k]) => !keys.includes(k))) as T;
}

// --- The reference config -----------------------------------------------------------

describe("examples/routewise.yaml", () => {
  it("loads with no environment and keeps what it says", () => {
    const { config } = loaded(loadConfig(reference, {}));
    const model = config.models["chat-fast"]!;
    expect(model.router).toBe("routewise");
    expect(model.routes!.map((r) => [r.id, r.provider_type])).toEqual([
      ["ondemand", "on_demand"],
      ["prepaid-us", "quota"],
      ["prepaid-eu", "quota"],
      ["reserved", "concurrency"],
    ]);
    expect(model.routes![0]!.api_key).toBeUndefined(); // `${ROUTEWISE_ONDEMAND_KEY:-}`: an optional secret
    expect(model.routes![1]!.quota_source).toEqual(model.routes![2]!.quota_source); // one subscription, one usage API
    expect(model.router_params!.budget_alpha).toBe(0.25);
  });

  it("takes its URLs and secrets from the environment when set", () => {
    const { config } = loaded(loadConfig(reference, { ROUTEWISE_ONDEMAND_URL: "http://127.0.0.1:9301/v1", ROUTEWISE_ONDEMAND_KEY: "sk-od" }));
    const route = config.models["chat-fast"]!.routes![0]!;
    expect(route.url).toBe("http://127.0.0.1:9301/v1");
    expect(route.api_key).toBe("sk-od");
  });

  it("sets every field of RouterParamsSchema and ProviderRouteSchema, nested objects included", () => {
    const required = REQUIRED_OF_SCHEMAS();
    // The walk reaches every object schema, so a field added to any of them is checked.
    expect([...objectPaths(RouterParamsSchema, "router_params"), ...objectPaths(ProviderRouteSchema, "routes")]).toEqual(
      expect.arrayContaining(["router_params", "router_params.output_predictor", "routes", "routes.concurrency", "routes.pricing", "routes.quota", "routes.quota_source"]),
    );
    expect(required).toEqual(expect.arrayContaining(["router_params.output_predictor.tokens", "routes.api_key", "routes.pricing.cached_input", "routes.quota.unit", "routes.quota_source.stale_after_s", "routes.concurrency.limit"]));

    const present = presentKeys(referenceModel(), "");
    expect(required.filter((key) => !present.has(key))).toEqual([]);
  });

  it("sets the model-level RouteWise keys and uses every provider_type", () => {
    const model = referenceModel();
    const modelKeys = Object.keys(defOf(unwrap(ModelSchema)).shape!);
    for (const key of ["router", "router_params", "routes"]) {
      expect(modelKeys).toContain(key);
      expect(model).toHaveProperty(key);
    }
    const types = Object.keys(defOf(unwrap(defOf(unwrap(ProviderRouteSchema)).shape!.provider_type)).entries!);
    expect(types.sort()).toEqual(["concurrency", "on_demand", "quota"]);
    expect(new Set((model.routes as { provider_type: string }[]).map((r) => r.provider_type))).toEqual(new Set(types));
  });

  it("sets nothing the schema does not know (a key here is a key of the schema)", () => {
    const required = new Set([...REQUIRED_OF_SCHEMAS(), "router", "router_params", "routes"]);
    const extra = [...presentKeys(referenceModel(), "")].filter((key) => !required.has(key));
    expect(extra).toEqual([]);
  });
});

// --- Validation ---------------------------------------------------------------------

describe("RouteWise validation names the failing path", () => {
  it("an on_demand route needs pricing", () => {
    expect(issuesOf(loadConfig(withRoutes([without(onDemand, "pricing")]), {}))).toEqual(["models.m.routes[0].pricing: is required: an on_demand route is paid per token"]);
  });

  it("a quota route needs its quota and a quota_source", () => {
    expect(issuesOf(loadConfig(withRoutes([without(quota, "quota_source")]), {}))).toEqual([
      "models.m.routes[0].quota_source: is required: the provider's usage API is the truth for a quota",
    ]);
    expect(issuesOf(loadConfig(withRoutes([without(quota, "quota")]), {}))).toEqual(["models.m.routes[0].quota: is required: a quota route states its limit"]);
  });

  it("quota fields belong to quota routes only", () => {
    const odd = { ...onDemand, quota: { limit: 5 }, quota_source: source, quota_pool: "team" };
    expect(issuesOf(loadConfig(withRoutes([odd]), {}))).toEqual([
      "models.m.routes[0].quota: applies to provider_type quota only",
      "models.m.routes[0].quota_pool: applies to provider_type quota only",
      "models.m.routes[0].quota_source: applies to provider_type quota only",
    ]);
  });

  it("a concurrency route needs concurrency; its fields belong to concurrency routes only", () => {
    expect(issuesOf(loadConfig(withRoutes([without(slots, "concurrency")]), {}))).toEqual(["models.m.routes[0].concurrency: is required: a concurrency route states its slots"]);
    expect(issuesOf(loadConfig(withRoutes([{ ...quota, concurrency: { limit: 1 }, concurrency_pool: "x" }]), {}))).toEqual([
      "models.m.routes[0].concurrency: applies to provider_type concurrency only",
      "models.m.routes[0].concurrency_pool: applies to provider_type concurrency only",
    ]);
  });

  it("router_params and routes apply to router: routewise only", () => {
    const config = JSON.stringify({ models: { m: { pool: "p", router_params: { budget_alpha: 0.5 }, routes: [onDemand] } }, pools });
    expect(issuesOf(loadConfig(config, {}))).toEqual(["models.m.router_params: applies to router: routewise only", "models.m.routes: applies to router: routewise only"]);
  });

  it("a model names one target: router with a pool is refused", () => {
    const config = JSON.stringify({ models: { m: { pool: "p", router: "routewise", routes: [onDemand] } }, pools });
    expect(issuesOf(loadConfig(config, {}))).toEqual(["models.m: must name exactly one of pool, graph or router: routewise"]);
  });

  it("router: routewise needs routes, and refuses the pool-only model fields", () => {
    expect(issuesOf(loadConfig(JSON.stringify({ models: { m: { router: "routewise" } } }), {}))).toEqual(["models.m.routes: is required: RouteWise routes among these providers"]);
    expect(issuesOf(loadConfig(withRoutes([], {}), {}))).toEqual(["models.m.routes: must have at least 1 item"]);
    expect(issuesOf(loadConfig(withRoutes([onDemand], { upstream_model: "x" }), {}))).toEqual([
      "models.m.upstream_model: does not apply to RouteWise models (upstream_model is set per route)",
    ]);
  });

  it("route ids are unique within a model", () => {
    expect(issuesOf(loadConfig(withRoutes([onDemand, { ...slots, id: "od" }]), {}))).toEqual(['models.m.routes[1].id: duplicate route id "od"']);
  });

  it("routes sharing a quota_pool state one quota and one usage API", () => {
    const a = { ...quota, id: "a", quota_pool: "team" };
    const limit = { ...a, id: "b", quota: { limit: 2000 } };
    expect(issuesOf(loadConfig(withRoutes([a, limit]), {}))).toEqual([
      'models.m.routes[1].quota: must match the other routes of quota_pool "team" (one subscription, one limit and usage API)',
    ]);
    const usage = { ...a, id: "b", quota_source: { ...source, used_path: "data.total" } };
    expect(issuesOf(loadConfig(withRoutes([a, usage]), {}))).toEqual([
      'models.m.routes[1].quota: must match the other routes of quota_pool "team" (one subscription, one limit and usage API)',
    ]);
    // Pools are shared across models, so the rule is too.
    const twoModels = JSON.stringify({ models: { m: { router: "routewise", routes: [a] }, n: { router: "routewise", routes: [{ ...limit, id: "a" }] } } });
    expect(issuesOf(loadConfig(twoModels, {}))).toEqual(['models.n.routes[0].quota: must match the other routes of quota_pool "team" (one subscription, one limit and usage API)']);
    // Alike, they load (defaults filled in count as written: unit tokens is the default).
    loaded(loadConfig(withRoutes([a, { ...a, id: "b", quota: { limit: 1000, unit: "tokens" } }]), {}));
  });

  it("routes sharing a concurrency_pool state one limit", () => {
    const a = { ...slots, id: "a", concurrency_pool: "gpus" };
    expect(issuesOf(loadConfig(withRoutes([a, { ...a, id: "b", concurrency: { limit: 3 } }]), {}))).toEqual([
      'models.m.routes[1].concurrency: must match the other routes of concurrency_pool "gpus" (one subscription, one limit)',
    ]);
  });

  it("quota_source paths must be GJSON", () => {
    const bad = { ...quota, quota_source: { ...source, used_path: "data.#(" } };
    expect(issuesOf(loadConfig(withRoutes([bad]), {}))).toEqual(["models.m.routes[0].quota_source.used_path: must be a GJSON path (e.g. data.used)"]);
  });

  it("budget_alpha lies in [0, 1]", () => {
    expect(issuesOf(loadConfig(withRoutes([onDemand], { router_params: { budget_alpha: 1.5 } }), {}))).toEqual(["models.m.router_params.budget_alpha: must be <= 1"]);
    expect(issuesOf(loadConfig(withRoutes([onDemand], { router_params: { budget_alpha: -0.1 } }), {}))).toEqual(["models.m.router_params.budget_alpha: must be >= 0"]);
    for (const alpha of [0, 1]) loaded(loadConfig(withRoutes([onDemand], { router_params: { budget_alpha: alpha } }), {}));
  });

  it("latency_hedge_mode is off, percentile or slo", () => {
    expect(issuesOf(loadConfig(withRoutes([onDemand], { router_params: { latency_hedge_mode: "sometimes" } }), {}))).toEqual([
      'models.m.router_params.latency_hedge_mode: must be one of "off", "percentile", "slo"',
    ]);
  });

  it("router_params and routes refuse unknown keys", () => {
    expect(issuesOf(loadConfig(withRoutes([{ ...onDemand, weight: 3 }], { router_params: { alpha: 0.1 } }), {}))).toEqual([
      'models.m.router_params: unknown key "alpha"',
      'models.m.routes[0]: unknown key "weight"',
    ]);
  });
});

// --- The "uncalibrated" warning -----------------------------------------------------

describe("a quota-bearing RouteWise model is valid, with a warning", () => {
  it("the reference model is warned about: 503 until calibrated, and how to calibrate", () => {
    const { warnings } = loaded(loadConfig(reference, {}));
    expect(warnings).toEqual([
      {
        path: "models.chat-fast",
        message:
          "has quota routes, so it answers 503 (routewise_uncalibrated) until every route has envelope_min_samples (20) latency samples; " +
          "seed them with `switchyard calibrate chat-fast --url <router>` or POST /admin/routewise/chat-fast/calibrate",
      },
    ]);
  });

  it("names the model's own envelope_min_samples, or the default", () => {
    const own = loaded(loadConfig(withRoutes([quota], { router_params: { envelope_min_samples: 5 } }), {}));
    expect(own.warnings.map((w) => w.path)).toEqual(["models.m"]);
    expect(own.warnings[0]!.message).toContain("envelope_min_samples (5)");
    expect(loaded(loadConfig(withRoutes([quota]), {})).warnings[0]!.message).toContain("envelope_min_samples (20)");
  });

  it("a RouteWise model without a quota route serves uncalibrated: no warning", () => {
    expect(loaded(loadConfig(withRoutes([onDemand, slots]), {})).warnings).toEqual([]);
  });

  it("in a stream of documents, names the document that holds the models", () => {
    const graph = `apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata: { name: side }
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
        - serviceUrl: http://127.0.0.1:9201/v1/models/side:predict
`;
    const { warnings } = loaded(loadConfig(`${graph}---\n${reference}`, {}));
    expect(warnings.map((w) => w.path)).toEqual(["documents[1].models.chat-fast"]);
  });
});

// --- describeConfig -----------------------------------------------------------------

describe("describeConfig shows RouteWise models", () => {
  it("the reference model: its knobs and each route's type, quota, slots and price", () => {
    const lines = describeConfig(loaded(loadConfig(reference, {})).config).split("\n");
    expect(lines[0]).toBe("1 model, 0 pools, 0 graphs");
    const at = lines.indexOf("  chat-fast -> routewise over 4 routes (alpha 0.25, hedge percentile, SLO 2000 ms at p95)");
    expect(at).toBe(1);
    expect(lines.slice(at + 1, at + 5)).toEqual([
      "    ondemand: on_demand, per 1M tokens: input 2.5, cached 1.25, output 10 (as gpt-4o-mini)",
      "    prepaid-us: quota, 5000000 tokens per 86400 s (fixed window), pool prepaid-team, free within the quota",
      "    prepaid-eu: quota, 5000000 tokens per 86400 s (fixed window), pool prepaid-team, free within the quota",
      "    reserved: concurrency, 8 slots, pool reserved-team, per 1M tokens: input 0.2, output 0.8",
    ]);
  });

  it("defaults when router_params is left out; pool models are listed as before", () => {
    const config = JSON.stringify({ models: { m: { router: "routewise", routes: [{ ...slots, concurrency: { limit: 1 } }] }, plain: { pool: "p" } }, pools });
    const text = describeConfig(loaded(loadConfig(config, {})).config);
    expect(text).toContain("  plain -> pool p\n");
    expect(text).toContain("  m -> routewise over 1 route (alpha 0.25, hedge off)\n    c: concurrency, 1 slot, free per token\n");
  });
});
