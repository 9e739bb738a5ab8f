/**
 * Every number of the config is bounded (src/core/config/bounds.ts, docs/config.md
 * "Bounds"): for each bounded field, a valid document with the field at its bound loads,
 * and the same document with the field just past it (and at 1e308) is refused with the
 * field's path and the bound in its message. A walk of the schemas checks that the table
 * names every number field there is, so a new field cannot arrive unbounded.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import { Seed004Schema } from "../../src/core/config/legacy-routing-yaml";
import { ConfigSchema } from "../../src/core/config/schema";

const URL = "http://127.0.0.1:9";

/** Related fields are set so that each field alone decides (cooldown_ms <= max_cooldown_ms, try_timeout_ms <= deadline_ms). */
const pool = () => ({
  models: { m: { pool: "p" } },
  pools: { p: { replicas: [{ id: "r", url: URL }], circuit: { cooldown_ms: 1_000, max_cooldown_ms: 86_400_000 } } },
  routing: { deadline_ms: 3_600_000 },
});

const routewise = () => ({
  models: {
    m: {
      router: "routewise",
      routes: [
        { id: "paid", provider_type: "on_demand", url: URL, pricing: { input: 1e-6, output: 2e-6, cached_input: 5e-7 } },
        {
          id: "prepaid",
          provider_type: "quota",
          url: URL,
          quota: { limit: 1_000 },
          quota_source: { url: URL, used_path: "used", window_s: 3_600 },
        },
        { id: "slots", provider_type: "concurrency", url: URL, concurrency: { limit: 4 } },
      ],
    },
  },
});

const limited = () => ({
  ...pool(),
  models: { m: { pool: "p", pricing: { input: 1, output: 2, cached_input: 0.5 } } },
  limits: [{ model: "m", requests_per_minute: 1, tokens_per_minute: 1, concurrent_requests: 1, spend: { amount: 1, window: "day" } }],
});

const graph = () => ({
  graphs: { g: { nodes: { root: { routerType: "Splitter", steps: [{ serviceUrl: URL, weight: 100 }] } } } },
});

const telemetry = () => ({ ...pool(), telemetry: { otlp: { endpoint: URL } } });

const seed = () => ({
  routing_parameter: { local_fraction: 1 },
  local_deployment: [{ endpoint: URL, models: ["m"] }],
  routing: { deadline_ms: 3_600_000 },
});

type Base = () => Record<string, unknown>;

/** [path of the field (as issues name it), its bound, a valid document to set it in, the value just past it (default bound + 1)]. */
const BOUNDED: [string, number, Base, number?][] = [
  // pools
  ["pools.p.replicas[0].weight", 1_000_000, pool],
  ["pools.p.max_ongoing_requests", 1_000_000, pool],
  ["pools.p.shed_retry_after_s", 3_600, pool],
  ["pools.p.health_check", 86_400, pool, 86_400.5],
  ["pools.p.queue.max_waiting", 10_000, pool],
  ["pools.p.queue.ttl_ms", 3_600_000, pool],
  ["pools.p.queue.max_waiting_per_tenant", 10_000, pool],
  ["pools.p.circuit.consecutive_failures", 1_000_000, pool],
  ["pools.p.circuit.window_ms", 86_400_000, pool],
  ["pools.p.circuit.min_requests", 1_000_000, pool],
  ["pools.p.circuit.cooldown_ms", 86_400_000, pool],
  ["pools.p.circuit.max_cooldown_ms", 86_400_000, pool],
  ["pools.p.circuit.half_open_probes", 1_000_000, pool],
  ["pools.p.metrics.scrape_ms", 86_400_000, pool],
  ["pools.p.metrics.timeout_ms", 60_000, pool],
  ["pools.p.metrics.stale_ms", 86_400_000, pool],
  ["pools.p.metrics.failure_threshold", 1_000_000, pool],
  ["pools.p.scoring.weights.prefix", 1_000_000, pool],
  ["pools.p.scoring.weights.queue", 1_000_000, pool],
  ["pools.p.scoring.weights.kv_cache", 1_000_000, pool],
  ["pools.p.scoring.weights.inflight", 1_000_000, pool],
  ["pools.p.scoring.weights.lora", 1_000_000, pool],
  ["pools.p.scoring.weights.locality", 1_000_000, pool],
  ["pools.p.scoring.min_match_blocks", 1_000_000, pool],
  ["pools.p.scoring.saturation.queue_depth", 1_000_000, pool],
  ["pools.p.scoring.balance.abs", 1_000_000, pool],
  ["pools.p.scoring.balance.rel", 1_000_000, pool],
  ["pools.p.scoring.busy_cap.load_factor", 1_000_000, pool],
  ["pools.p.scoring.busy_cap.floor", 1_000_000, pool],
  ["pools.p.scoring.index_capacity_blocks", 1_000_000, pool],
  // routing
  ["routing.try_timeout_ms", 3_600_000, pool],
  ["routing.deadline_ms", 3_600_000, pool],
  ["routing.max_attempts", 100, pool],
  ["routing.max_body_bytes", 104_857_600, pool],
  ["routing.affinity.ttl_s", 2_592_000, pool, 2_592_000.5],
  // RouteWise
  ["models.m.routes[0].pricing.input", 100, routewise, 100.000001],
  ["models.m.routes[0].pricing.output", 100, routewise, 100.000001],
  ["models.m.routes[0].pricing.cached_input", 100, routewise, 100.000001],
  ["models.m.routes[1].quota.limit", Number.MAX_SAFE_INTEGER, routewise, 2 ** 53],
  ["models.m.routes[1].quota_source.window_s", 31_622_400, routewise],
  ["models.m.routes[1].quota_source.poll_s", 86_400, routewise],
  ["models.m.routes[1].quota_source.timeout_ms", 60_000, routewise],
  ["models.m.routes[1].quota_source.stale_after_s", 31_622_400, routewise],
  ["models.m.routes[2].concurrency.limit", 1_000_000, routewise],
  ["models.m.router_params.latency_slo_ms", 3_600_000, routewise],
  ["models.m.router_params.latency_window_s", 31_622_400, routewise],
  ["models.m.router_params.envelope_window_s", 31_622_400, routewise],
  ["models.m.router_params.envelope_min_samples", 2_000, routewise],
  ["models.m.router_params.output_predictor.tokens", 1_000_000, routewise],
  // limits
  ["models.m.pricing.input", 100_000_000, limited],
  ["models.m.pricing.output", 100_000_000, limited],
  ["models.m.pricing.cached_input", 100_000_000, limited],
  ["limits[0].requests_per_minute", 1_000_000_000, limited],
  ["limits[0].tokens_per_minute", 1_000_000_000_000, limited],
  ["limits[0].concurrent_requests", 1_000_000, limited],
  ["limits[0].spend.amount", 1_000_000_000_000, limited],
  // graphs
  ["graphs.g.nodes.root.steps[0].weight", 100, graph],
  ["graphs.g.nodes.root.steps[0].timeoutMs", 3_600_000, graph],
  ["graphs.g.routerTimeouts.serviceClient", 3_600, graph],
  ["graph_settings.step_timeout_ms", 3_600_000, graph],
  // telemetry
  ["telemetry.otlp.timeout_ms", 60_000, telemetry],
  ["telemetry.otlp.max_queued_spans", 10_000, telemetry],
  // seed 004's routing.yaml
  ["routing_parameter.timeout", 3_600, seed, 3_600.5],
  ["routing_parameter.health_check", 86_400, seed, 86_400.5],
];

/**
 * Number fields bounded otherwise, each with how: a range the field always had, or a
 * number that must equal or stay under another field's.
 */
const BOUNDED_OTHERWISE: Record<string, string> = {
  "pools.*.circuit.error_ratio": "(0, 1]",
  "pools.*.critical_share": "(0, 1]",
  "pools.*.scoring.match_threshold": "[0, 1]",
  "pools.*.scoring.saturation.kv_usage": "[0, 1]",
  "routing.retry_on[]": "HTTP statuses 400-599",
  "models.*.router_params.budget_alpha": "[0, 1]",
  "models.*.router_params.latency_slo_percentile": "(0, 100)",
  "models.*.router_params.envelope_percentiles[]": "(0, 100)",
  "models.*.router_params.output_predictor.percentile": "(0, 100)",
  "graphs.*.nodes.*.steps[].retries": "0-5 (MAX_STEP_RETRIES)",
  "graphs.*.nodes.*.steps[].mirror": "a percentage, [0, 100]",
  "graphs.*.nodes.*.router.n_branches": "must equal the number of the node's steps",
  "graphs.*.nodes.*.router.best_branch": "must be < n_branches",
  "graphs.*.nodes.*.router.epsilon": "[0, 1]",
  "graphs.*.nodes.*.router.ratioA": "[0, 1]",
  "graphs.*.nodes.*.router.seed": "only its bits seed the random source; a safe integer (z.int)",
  "graphs.*.nodes.*.router.prior.alpha": "(0, 1,000,000] pseudo-counts (MAX_PRIOR)",
  "graphs.*.nodes.*.router.prior.beta": "(0, 1,000,000] pseudo-counts (MAX_PRIOR)",
  "graphs.*.routerTimeouts.serverRead": "KServe's, unused at the edge; a safe integer (z.int)",
  "graphs.*.routerTimeouts.serverWrite": "KServe's, unused at the edge; a safe integer (z.int)",
  "graphs.*.routerTimeouts.serverIdle": "KServe's, unused at the edge; a safe integer (z.int)",
  "routing_parameter.local_fraction": "[0, 1]",
  "telemetry.otlp.sampling_ratio": "[0, 1]",
  "limits[].spend.warn_at": "(0, 1]",
};

function keysOf(path: string): (string | number)[] {
  return [...path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) => (m[2] !== undefined ? Number(m[2]) : m[1]!));
}

function withField(base: Base, path: string, value: number): string {
  const document = base();
  const keys = keysOf(path);
  let at = document as Record<string | number, unknown>;
  for (const key of keys.slice(0, -1)) {
    at[key] ??= {};
    at = at[key] as Record<string | number, unknown>;
  }
  at[keys.at(-1)!] = value;
  return JSON.stringify(document);
}

describe("config bounds", () => {
  it.each(BOUNDED)("%s at its bound %s loads", (path, max, base) => {
    const result = loadConfig(withField(base, path, max), {});
    expect(result.ok ? [] : result.errors).toEqual([]);
  });

  it.each(BOUNDED)("%s past its bound %s is refused with its path and the bound", (path, max, base, over = max + 1) => {
    const issuesAt = (value: number) => {
      const result = loadConfig(withField(base, path, value), {});
      return (result.ok ? [] : result.errors).filter((e) => e.path === path).map((e) => e.message);
    };
    // (try_timeout_ms past an hour is also past deadline_ms, and says so too.)
    expect(issuesAt(over)).toContainEqual(expect.stringMatching(boundMessage(max)));
    // 1e308 is named by the field's own bound, not also by z.int()'s safe-integer one.
    const huge = issuesAt(1e308);
    expect(huge).toContainEqual(expect.stringMatching(boundMessage(max)));
    if (max !== Number.MAX_SAFE_INTEGER) expect(huge.filter((m) => m.startsWith(`must be <= ${Number.MAX_SAFE_INTEGER}`))).toEqual([]);
  });

  it("names every number field of the schemas", () => {
    const bounded = new Set(BOUNDED.map(([path]) => pattern(path)));
    const walked = [...numberFields(ConfigSchema, ""), ...numberFields(Seed004Schema, "").filter((p) => p.startsWith("routing_parameter."))];
    const unnamed = walked.filter((p) => !bounded.has(p) && !(p in BOUNDED_OTHERWISE));
    expect(unnamed).toEqual([]);
    // And the table names only fields that exist.
    expect([...bounded, ...Object.keys(BOUNDED_OTHERWISE)].filter((p) => !walked.includes(p))).toEqual([]);
  });
});

/** `must be <= 1000000 (unit...)`; the safe-integer bound of z.int() keeps zod's wording. */
function boundMessage(max: number): RegExp {
  return max === Number.MAX_SAFE_INTEGER ? new RegExp(`^must be <= ${max}`) : new RegExp(`^must be <= ${max} \\(.+\\)$`);
}

/** A concrete path as a field pattern: `pools.p.replicas[0].weight` -> `pools.*.replicas[].weight`. */
function pattern(path: string): string {
  return path
    .replace(/\[\d+\]/g, "[]")
    .replace(/^(models|pools|graphs)\.[^.[]+/, "$1.*")
    .replace(/\.nodes\.[^.[]+/, ".nodes.*");
}

// --- Walking zod/mini schemas (as test/unit/routewise-config.test.ts does) ---------------

interface Def {
  type: string;
  shape?: Record<string, unknown>;
  innerType?: unknown;
  in?: unknown;
  element?: unknown;
  options?: unknown[];
  valueType?: unknown;
}

const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;

/** Every number field reachable in `schema`, as patterns: `*` for a record's key, `[]` for a list's item. */
function numberFields(schema: unknown, path: string): string[] {
  const def = defOf(schema);
  if (def.innerType !== undefined) return numberFields(def.innerType, path);
  switch (def.type) {
    case "pipe":
      return numberFields(def.in, path);
    case "number":
      return [path];
    case "array":
      return numberFields(def.element, `${path}[]`);
    case "record":
      return numberFields(def.valueType, `${path}.*`);
    case "union":
      return [...new Set((def.options ?? []).flatMap((option) => numberFields(option, path)))];
    case "object":
      return Object.entries(def.shape!).flatMap(([key, inner]) => numberFields(inner, path === "" ? key : `${path}.${key}`));
    default:
      return [];
  }
}

describe("bounds shared with RouteWise", () => {
  it("envelope_min_samples can be reached: a route keeps at least that many samples", async () => {
    const { MAX_ENVELOPE_MIN_SAMPLES } = await import("../../src/core/config/bounds");
    const { MAX_SAMPLES_PER_ROUTE } = await import("../../src/core/routewise/envelope");
    expect(MAX_ENVELOPE_MIN_SAMPLES).toBeLessThanOrEqual(MAX_SAMPLES_PER_ROUTE);
  });
});
