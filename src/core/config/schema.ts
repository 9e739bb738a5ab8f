import * as z from "zod/mini";
import { DEFAULT_CIRCUIT_POLICY } from "../health/circuit";
import { isHttpUrl } from "./url";
import { pathProblem } from "../upstream/url";
import { POLICY_NAMES } from "../picking/policies";
import { DEFAULT_SHED_RETRY_AFTER_S, ScoringSchema } from "./scoring-schema";
import { GraphSettingsSchema, GraphSpecSchema, ServiceSchema } from "./graph-schema";
import { ProviderRouteSchema, RouterParamsSchema } from "./routewise-schema";
import { ClientKeySchema, LimitRuleSchema, limitsIssues, ModelPricingSchema } from "./limits-schema";
import { TelemetrySchema } from "./telemetry-schema";
import { atMost, MAX_ATTEMPTS, MAX_COUNT, MAX_PERIOD_MS, MAX_PERIOD_S, MAX_PIN_TTL_S, MAX_PROBE_TIMEOUT_MS, MAX_QUEUE_WAITING, MAX_REQUEST_MS, MAX_RETRY_AFTER_S, MAX_WEIGHT } from "./bounds";

/**
 * Switchyard's native config document. Types are derived from the schema (`Config`),
 * never written by hand, so validation and code cannot drift apart.
 *
 * Written with zod/mini: the same validation core (and so the same issues) as classic
 * zod, but with functions instead of methods, so the bundle carries only what these
 * schemas use. Classic zod's method chains pull in all of zod, ~450 KB of the Worker.
 */

// Defaults, each with the reason it is what it is.
export const DEFAULT_TRY_TIMEOUT_MS = 60_000; // time to response headers; a non-streamed completion of a few thousand tokens fits
export const DEFAULT_DEADLINE_MS = 300_000; // whole exchange incl. streamed body; LiteLLM-like bound for long generations
export const DEFAULT_RETRY_ON = [429, 500, 502, 503, 504, 529]; // overload and server faults (529: Anthropic's overloaded); 4xx are the client's own answer
export const DEFAULT_PIN_TTL_S = 300; // seed 004: a pin lives five minutes past its last use
export const DEFAULT_HEALTH_PATH = "/health"; // vLLM, TGI and SGLang all answer here
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024; // a 128k-token prompt is ~0.5 MiB; leaves room for inline images
export const MAX_BODY_BYTES_LIMIT = 100 * 1024 * 1024; // Cloudflare's Free/Pro plan request body ceiling

/** Load-shedding classes, most sheddable first (so a lower index is a lower priority). */
export const PRIORITIES = ["sheddable", "standard", "critical"] as const;
/** The APIs a replica may speak besides chat completions (the default). */
export const REPLICA_DIALECTS = ["chat", "anthropic"] as const;
export type Priority = (typeof PRIORITIES)[number];

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/;
const name = (what: string) =>
  z.string().check(z.regex(NAME, { error: `${what} must be 1-128 characters of letters, digits and . _ : / @ -, starting with a letter or digit` }));

// A graph answers at /graphs/<name>[/...], so its name is one path segment: no slash.
const GRAPH_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
const graphName = z.string().check(z.regex(GRAPH_NAME, { error: "graph name must be 1-128 characters of letters, digits and . _ : @ -, starting with a letter or digit (it is one segment of /graphs/<name>)" }));

const httpUrl = z.string().check(z.refine((value) => isHttpUrl(value), { error: "must be an absolute http(s) URL without query or fragment" }));

export const ReplicaSchema = z
  .strictObject({
    id: name("replica id"),
    url: httpUrl,
    weight: z._default(z.number().check(z.minimum(0, { error: "must be >= 0" }), atMost(MAX_WEIGHT, "relative weight")), 1),
    labels: z._default(z.array(z.string().check(z.minLength(1))), []),
    /**
     * Sent upstream as `Authorization: Bearer`; usually a `${SECRET}` reference. Empty
     * means none, so `${KEY:-}` makes a key optional.
     */
    api_key: z.pipe(
      z.optional(z.string()),
      z.transform((key: string | undefined) => (key === "" ? undefined : key)),
    ),
    /**
     * The API the replica answers (absent: chat completions). `anthropic`: Anthropic's
     * Messages API; its `api_key` is sent as `x-api-key`, a Messages request passes
     * through untranslated and a chat request is translated (docs/dialects.md).
     */
    dialect: z.optional(z.enum(REPLICA_DIALECTS)),
  });

/** A count a counter is compared with, at least `min`, of `what`. */
const count = (min: number, what: string) => z.int().check(z.minimum(min), atMost(MAX_COUNT, what));
/** A period or window of health state, ms. */
const periodMs = z.int().check(z.positive(), atMost(MAX_PERIOD_MS, "ms: a day"));

/** A health or metrics path: joined to each replica's URL, so it must stay on that server (../upstream/url.ts). */
const ownServerPath = z.string().check(
  z.startsWith("/", { error: "must start with /" }),
  z.superRefine((path, ctx) => {
    const problem = path.startsWith("/") ? pathProblem(path) : null;
    if (problem !== null) ctx.addIssue({ code: "custom", message: `must be a path on the replica's own server: ${problem}`, input: path });
  }),
);

/** Any field left out takes its default from DEFAULT_CIRCUIT_POLICY. */
export const CircuitSchema = z
  .strictObject({
    consecutive_failures: z._default(count(1, "failures"), DEFAULT_CIRCUIT_POLICY.consecutive_failures),
    error_ratio: z._default(z.number().check(z.gt(0), z.maximum(1)), DEFAULT_CIRCUIT_POLICY.error_ratio),
    window_ms: z._default(periodMs, DEFAULT_CIRCUIT_POLICY.window_ms),
    min_requests: z._default(count(1, "requests"), DEFAULT_CIRCUIT_POLICY.min_requests),
    cooldown_ms: z._default(periodMs, DEFAULT_CIRCUIT_POLICY.cooldown_ms),
    max_cooldown_ms: z._default(periodMs, DEFAULT_CIRCUIT_POLICY.max_cooldown_ms),
    half_open_probes: z._default(count(1, "requests"), DEFAULT_CIRCUIT_POLICY.half_open_probes),
  })
  .check(z.refine((c) => c.max_cooldown_ms >= c.cooldown_ms, { error: "must be >= cooldown_ms", path: ["max_cooldown_ms"] }));

export const DEFAULT_METRICS_PATH = "/metrics"; // vLLM, SGLang and TGI all expose Prometheus text here
export const DEFAULT_SCRAPE_TIMEOUT_MS = 1_000; // a /metrics slower than this says nothing current about the replica
export const DEFAULT_METRICS_STALE_MS = 5_000; // llm-d raised GAIE's 200 ms to 5 s after stale-metric outages; past this a sample is not routed on
export const DEFAULT_SCRAPE_FAILURES = 3; // GAIE/llm-d failureThreshold: one slow scrape must not flap a replica's numbers away
export const DEFAULT_SCRAPE_MS = 1_000; // scrape_ms left out, policy routes on engine metrics: a sample at most ~1.5 s old when routed on (with the 500 ms view refresh), stale_ms (5 s) spans five scrapes, one small GET a second per replica
export const MIN_HEALTH_CHECK_S = 1; // a probe also times out after the period: shorter than a second, a healthy replica's answer misses it
export const MIN_SCRAPE_MS = 250; // each scrape is an alarm of the pool's object; faster buys little after a 500 ms view refresh

export const DEFAULT_TENANT_QUEUE_SHARE = 0.25; // of max_waiting, when max_waiting_per_tenant is left out: four clients flooding at once still leave room for a fifth
export const DEFAULT_CRITICAL_SHARE = 0.5; // of a pool's slots: a flood of critical requests leaves standard ones half the pool
export const DEFAULT_QUEUE_TTL_MS = 2_000; // four view refreshes (500 ms) for other isolates' releases to show, yet short of an interactive client's patience: past it a 429 lets the client back off

/**
 * The fair queue of requests that load shedding would refuse (src/core/pool/wait-queue.ts):
 * per pool and per isolate, waiting by priority and round robin across tenants.
 */
export const QueueSchema = z.strictObject({
  /** Requests that may wait per pool in each isolate; 0 = off (refused requests get 429 at once). */
  max_waiting: z._default(z.int().check(z.minimum(0), atMost(MAX_QUEUE_WAITING, "requests per pool and isolate")), 0),
  /** A waiter not admitted within this many ms gets the 429 after all. */
  ttl_ms: z._default(z.int().check(z.positive(), atMost(MAX_REQUEST_MS, "ms: an hour")), DEFAULT_QUEUE_TTL_MS),
  /**
   * Requests one tenant (client key, else client address) may have waiting per pool in
   * each isolate; past it that tenant gets the 429 while others still queue. Default:
   * a quarter of max_waiting, at least 1.
   */
  max_waiting_per_tenant: z.optional(z.int().check(z.minimum(1), atMost(MAX_QUEUE_WAITING, "requests per tenant, pool and isolate"))),
});

/** Replicas' own metrics (vLLM's `/metrics`), read by the pool's object on an alarm. */
export const MetricsSchema = z
  .strictObject({
    /**
     * Milliseconds between scrapes, 0 = off. Left out: DEFAULT_SCRAPE_MS when the pool's
     * policy routes on engine metrics (gaie, switchyard: ../picking/reads-metrics.ts),
     * else off; ../pool/spec.ts settles it.
     */
    scrape_ms: z.optional(z.int().check(z.refine((ms) => ms === 0 || ms >= MIN_SCRAPE_MS, { error: `must be 0 (off) or >= ${MIN_SCRAPE_MS}` }), atMost(MAX_PERIOD_MS, "ms: a day"))),
    path: z._default(ownServerPath, DEFAULT_METRICS_PATH),
    /** Each replica's scrape gives up after this many ms, or after scrape_ms when that is shorter. */
    timeout_ms: z._default(z.int().check(z.positive(), atMost(MAX_PROBE_TIMEOUT_MS, "ms: a minute")), DEFAULT_SCRAPE_TIMEOUT_MS),
    /** A sample older than this is not routed on (the replica is then judged by load alone). */
    stale_ms: z._default(periodMs, DEFAULT_METRICS_STALE_MS),
    /** Consecutive failed scrapes before a replica's last sample is dropped. */
    failure_threshold: z._default(count(1, "scrapes"), DEFAULT_SCRAPE_FAILURES),
  });

export const PoolSchema = z
  .strictObject({
    replicas: z.array(ReplicaSchema).check(z.minLength(1, { error: "must list at least one replica" })),
    /**
     * How a replica is picked: weighted (default, by weight alone) or another profile of
     * src/core/picking/policies.ts (docs/picking.md).
     */
    policy: z._default(z.enum(POLICY_NAMES), "weighted"),
    /** Knobs of the `switchyard` and `gaie` policies; see ./scoring-schema.ts. */
    scoring: z._default(ScoringSchema, () => ScoringSchema.parse({})),
    /**
     * Label keys matched against where a request entered (`request.cf`: colo, country,
     * continent, region): a replica labelled `colo=AMS` is preferred for requests that
     * entered at AMS. Empty: locality is off.
     */
    locality: z._default(z.array(z.enum(["colo", "country", "continent", "region"])), []),
    /** Requests the router fleet sends one replica at once (Ray Serve's knob); 0 = no cap. */
    max_ongoing_requests: z._default(count(0, "requests per replica"), 0),
    /**
     * With max_ongoing_requests set: the share of the pool's slots (cap × routable
     * replicas, rounded down, at least 1) that `critical` requests may hold in one
     * isolate; past it they wait (or get 429) while other classes use the rest.
     */
    critical_share: z._default(z.number().check(z.gt(0), z.maximum(1)), DEFAULT_CRITICAL_SHARE),
    /** Seconds in the Retry-After of a request refused because the pool is saturated. */
    shed_retry_after_s: z._default(z.int().check(z.minimum(1), atMost(MAX_RETRY_AFTER_S, "s: an hour")), DEFAULT_SHED_RETRY_AFTER_S),
    /** Requests that would be refused wait here for a free slot instead (off by default). */
    queue: z._default(QueueSchema, () => QueueSchema.parse({})),
    /** With every circuit open: false answers 503 at once, true tries the replicas anyway. */
    fail_open: z._default(z.boolean(), false),
    /** Seconds between active health checks, 0 = off (seed 004 semantics). */
    health_check: z._default(z.number().check(z.refine((s) => s === 0 || s >= MIN_HEALTH_CHECK_S, { error: `must be 0 (off) or >= ${MIN_HEALTH_CHECK_S}` }), atMost(MAX_PERIOD_S, "s: a day")), 0),
    health_path: z._default(ownServerPath, DEFAULT_HEALTH_PATH),
    circuit: z._default(CircuitSchema, () => CircuitSchema.parse({})),
    metrics: z._default(MetricsSchema, () => MetricsSchema.parse({})),
  })
  .check(
    z.superRefine((pool, ctx) => {
      const seen = new Set<string>();
      pool.replicas.forEach((replica, i) => {
        if (seen.has(replica.id)) ctx.addIssue({ code: "custom", path: ["replicas", i, "id"], message: `duplicate replica id "${replica.id}"` });
        seen.add(replica.id);
      });
    }),
  );

/** A model names exactly one target: a pool of replicas, an inference graph, or RouteWise over provider routes. */
export const ModelSchema = z
  .strictObject({
    pool: z.optional(z.string().check(z.minLength(1))),
    graph: z.optional(z.string().check(z.minLength(1))),
    /** Model name the upstream expects, when it differs from the public one (pools only). */
    // A dot segment would make KServe's /v2/models/<name>/infer leave its path, which the URL join refuses per request.
    upstream_model: z.optional(z.string().check(z.minLength(1), z.refine((m) => m !== "." && m !== "..", { error: 'must not be "." or "..": KServe paths are built from it' }))),
    /**
     * A LoRA adapter on a base model: its prompts share the base model's KV cache only with
     * the same adapter, and replicas that have it loaded are preferred. `adapter` defaults
     * to the upstream model name (vLLM serves an adapter under its own name).
     */
    lora: z.optional(z.strictObject({ base: z.string().check(z.minLength(1)), adapter: z.optional(z.string().check(z.minLength(1))) })),
    /**
     * Load shedding class (GAIE's criticality): when every replica of the pool is
     * saturated, `sheddable` requests get 429 + Retry-After, `standard` ones are refused only
     * when every replica is at max_ongoing_requests, `critical` ones are never shed but
     * still held to max_ongoing_requests (they wait first in the queue) and the pool's `critical_share`.
     * A request may lower its own class with `X-Switchyard-Priority`, never raise it. Default standard.
     */
    priority: z.optional(z.enum(PRIORITIES)),
    /** `routewise`: cost-aware routing over `routes` (README "RouteWise"); absent: the pool or graph decides. */
    router: z.optional(z.enum(["routewise"])),
    /** RouteWise's algorithm knobs (./routewise-schema.ts); defaults when left out. */
    router_params: z.optional(RouterParamsSchema),
    /** RouteWise's providers, each with its resource semantics. */
    routes: z.optional(z.array(ProviderRouteSchema).check(z.minLength(1, { error: "must list at least one route" }))),
    /** What its tokens cost, per million, for spend limits (docs/limits.md); RouteWise models use their routes' pricing. */
    pricing: z.optional(ModelPricingSchema),
    /** false: requests to this model record no spans (docs/telemetry.md); their log lines still carry a client's trace id. */
    telemetry: z.optional(z.boolean()),
  })
  .check(
    z.superRefine((model, ctx) => {
      const targets = [model.pool, model.graph, model.router].filter((t) => t !== undefined).length;
      if (targets !== 1) {
        ctx.addIssue({ code: "custom", path: [], message: "must name exactly one of pool, graph or router: routewise" });
      }
      if (model.router === "routewise") {
        if (model.routes === undefined) ctx.addIssue({ code: "custom", path: ["routes"], message: "is required: RouteWise routes among these providers" });
        for (const key of ["upstream_model", "lora", "priority"] as const) {
          if (model[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: "does not apply to RouteWise models (upstream_model is set per route)" });
        }
        const seen = new Set<string>();
        model.routes?.forEach((route, i) => {
          if (seen.has(route.id)) ctx.addIssue({ code: "custom", path: ["routes", i, "id"], message: `duplicate route id "${route.id}"` });
          seen.add(route.id);
        });
      } else {
        for (const key of ["router_params", "routes"] as const) {
          if (model[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: "applies to router: routewise only" });
        }
      }
      if (model.graph !== undefined && model.upstream_model !== undefined) {
        ctx.addIssue({ code: "custom", path: ["upstream_model"], message: "applies to pool targets only" });
      }
      for (const key of ["lora", "priority"] as const) {
        if (model.graph !== undefined && model[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: "applies to pool targets only" });
      }
    }),
  );

export const RoutingSchema = z
  .strictObject({
    try_timeout_ms: z._default(z.int().check(z.positive(), atMost(MAX_REQUEST_MS, "ms: an hour")), DEFAULT_TRY_TIMEOUT_MS),
    deadline_ms: z._default(z.int().check(z.positive(), atMost(MAX_REQUEST_MS, "ms: an hour")), DEFAULT_DEADLINE_MS),
    retry_on: z._default(z.array(z.int().check(z.minimum(400), z.maximum(599))), DEFAULT_RETRY_ON),
    /** Attempts per request across the fallback list; default: every candidate once. */
    max_attempts: z.optional(z.int().check(z.minimum(1), atMost(MAX_ATTEMPTS, "attempts"))),
    max_body_bytes: z._default(z.int().check(z.positive(), atMost(MAX_BODY_BYTES_LIMIT, "bytes: 100 MiB")), DEFAULT_MAX_BODY_BYTES),
    /** Session affinity: one pin per (client, model). ROUTING_AFFINITY_ENABLED=0 also turns it off. */
    affinity: z._default(
      z.strictObject({
        enabled: z._default(z.boolean(), true),
        ttl_s: z._default(z.number().check(z.positive(), atMost(MAX_PIN_TTL_S, "s: 30 days")), DEFAULT_PIN_TTL_S),
      }),
      { enabled: true, ttl_s: DEFAULT_PIN_TTL_S },
    ),
    /**
     * Pins, circuits and leases in Durable Objects. false routes on weights alone with no
     * Durable Object round trip (what the bench's stateless row measures).
     */
    shared_state: z._default(z.boolean(), true),
    /**
     * false (default): `GET /routing` needs the admin token. true: any client (any client
     * key, when keys are configured) may read its public view, models and their shares
     * only; the admin token still reads the whole view. Prices, budgets, quotas, URLs,
     * errors and state are operational, whether the upstreams are private or not.
     */
    public_view: z._default(z.boolean(), false),
  });

export const AuthSchema = z
  .strictObject({
    /** `sha256:<64 hex>` or a `${VAR}` secret; raw keys are refused at load. */
    client_keys: z._default(z.array(z.string().check(z.minLength(1))), []),
    /** Named keys: each a principal, optionally in a team, that limits can name (docs/limits.md). */
    keys: z._default(z.array(ClientKeySchema), []),
  });

const ConfigObjectSchema = z
  .strictObject({
    models: z._default(z.record(name("model name"), ModelSchema), {}),
    pools: z._default(z.record(name("pool name"), PoolSchema), {}),
    /** Inference graphs by name; KServe InferenceGraph documents in the same file land here too. */
    graphs: z._default(z.record(graphName, GraphSpecSchema), {}),
    /** Targets of graph steps' `serviceName`. */
    services: z._default(z.record(z.string(), ServiceSchema), {}),
    graph_settings: z._default(GraphSettingsSchema, () => GraphSettingsSchema.parse({})),
    routing: z._default(RoutingSchema, () => RoutingSchema.parse({})),
    auth: z._default(AuthSchema, () => AuthSchema.parse({})),
    /** Limits on what keys, teams and models may use; every matching rule applies (docs/limits.md). */
    limits: z._default(z.array(LimitRuleSchema), []),
    /** OpenTelemetry traces (./telemetry-schema.ts); absent: none. */
    telemetry: z._default(TelemetrySchema, {}),
  })
  .check(
    z.superRefine((config, ctx) => {
      if (Object.keys(config.models).length === 0 && Object.keys(config.graphs).length === 0) {
        ctx.addIssue({ code: "custom", path: [], message: "routes nothing: define models (with pools) or inference graphs" });
      }
      for (const [model, target] of Object.entries(config.models)) {
        if (target.pool !== undefined && !Object.hasOwn(config.pools, target.pool)) {
          ctx.addIssue({ code: "custom", path: ["models", model, "pool"], message: `unknown pool "${target.pool}"` });
        }
        if (target.graph !== undefined && !Object.hasOwn(config.graphs, target.graph)) {
          ctx.addIssue({ code: "custom", path: ["models", model, "graph"], message: `unknown graph "${target.graph}"` });
        }
      }
      sharedPoolIssues(config, ctx);
      limitsIssues(config, ctx);
      if (config.routing.try_timeout_ms > config.routing.deadline_ms) {
        ctx.addIssue({ code: "custom", path: ["routing", "try_timeout_ms"], message: "must be <= routing.deadline_ms" });
      }
    }),
  );

/** The native config. */
export const ConfigSchema = ConfigObjectSchema;

/**
 * Routes that share a quota or concurrency pool share one subscription, so they must
 * describe it alike: one limit (and one usage API), or the pool's object could not tell
 * which to believe.
 */
function sharedPoolIssues(config: z.output<typeof ConfigObjectSchema>, ctx: z.core.$RefinementCtx<unknown>): void {
  const first = new Map<string, string>();
  for (const [model, target] of Object.entries(config.models)) {
    target.routes?.forEach((route, i) => {
      const check = (kind: string, id: string | undefined, key: "quota" | "concurrency", describe: string) => {
        if (id === undefined) return;
        const seen = first.get(`${kind}:${id}`);
        if (seen === undefined) first.set(`${kind}:${id}`, describe);
        else if (seen !== describe) ctx.addIssue({ code: "custom", path: ["models", model, "routes", i, key], message: `must match the other routes of ${kind} "${id}" (one subscription, one limit${kind === "quota_pool" ? " and usage API" : ""})` });
      };
      check("quota_pool", route.quota_pool, "quota", JSON.stringify([route.quota, route.quota_source]));
      check("concurrency_pool", route.concurrency_pool, "concurrency", JSON.stringify(route.concurrency));
    });
  }
}

export type Config = z.output<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;
export type Pool = z.output<typeof PoolSchema>;
export type Replica = z.output<typeof ReplicaSchema>;
export type RoutingDefaults = z.output<typeof RoutingSchema>;
export type CircuitSettings = z.output<typeof CircuitSchema>;
