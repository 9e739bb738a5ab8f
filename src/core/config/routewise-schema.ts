import * as z from "zod/mini";
import { compilePath } from "../../lib/gjson";
import { isHttpUrl } from "./url";
import { atMost, MAX_COUNT, MAX_ENVELOPE_MIN_SAMPLES, MAX_OUTPUT_TOKENS_ASKED, MAX_PERIOD_S, MAX_PRICE_PER_TOKEN, MAX_PROBE_TIMEOUT_MS, MAX_REQUEST_MS, MAX_WINDOW_S } from "./bounds";

/**
 * RouteWise (seed 004, "RouteWise Strategy"): cost-aware routing among providers, opted
 * into per model with `router: routewise`. The config splits by ownership, as the seed
 * does: `router_params` holds the algorithm's knobs only; each entry of `routes` holds a
 * provider's resource semantics (what it costs, what quota or concurrency it has).
 * The reference block listing every option is examples/routewise.yaml, and
 * test/unit/routewise-config.test.ts fails when a field here is missing from it.
 */

export const DEFAULT_BUDGET_ALPHA = 0.25; // a quarter of the way from cheapest to dearest: most of the saving, room to dodge a slow provider
export const DEFAULT_LATENCY_SLO_PERCENTILE = 95; // SLOs are usually stated at p95; hedging at it re-sends ~1 request in 20
export const DEFAULT_LATENCY_WINDOW_S = 300; // five minutes of traffic decide whether a route meets the SLO now
export const DEFAULT_ENVELOPE_PERCENTILES = [50, 90, 95, 99]; // what /routing shows and the SLO/hedge may reference
export const DEFAULT_ENVELOPE_WINDOW_S = 3_600; // an hour: long enough to hold min samples on a quiet model
export const DEFAULT_ENVELOPE_MIN_SAMPLES = 20; // fewer samples give a p95 that one request can move
export const DEFAULT_OUTPUT_TOKENS = 256; // prediction before any sample: a typical chat answer
export const DEFAULT_QUOTA_POLL_S = 60; // provider usage APIs are themselves minutes behind; a minute costs them nothing
export const DEFAULT_QUOTA_STALE_S = 300; // five polls missed: past this an unreachable source means "exhausted"
export const DEFAULT_QUOTA_TIMEOUT_MS = 5_000; // a usage API call is off the request path; a slow one is still an answer

const percentile = z.number().check(z.gt(0), z.lt(100));
const perToken = z.number().check(z.minimum(0, { error: "must be >= 0 (currency per token)" }), atMost(MAX_PRICE_PER_TOKEN, `currency per token, ${MAX_PRICE_PER_TOKEN * 1e6} per million tokens`));
/** A window, seconds: up to a year. */
const windowS = z.int().check(z.positive(), atMost(MAX_WINDOW_S, "s: 366 days"));
const httpUrl = z.string().check(z.refine((value) => isHttpUrl(value), { error: "must be an absolute http(s) URL without query or fragment" }));
const poolId = z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/, { error: "must be 1-64 characters of letters, digits and . _ : -" }));
const gjsonPath = z.string().check(
  z.minLength(1),
  z.refine(
    (path) => {
      try {
        compilePath(path);
        return true;
      } catch {
        return false;
      }
    },
    { error: "must be a GJSON path (e.g. data.used)" },
  ),
);

/** How many output tokens a request is expected to produce (its output cost and latency). */
export const OutputPredictorSchema = z.strictObject({
  /**
   * `envelope_mean`: the route's mean output over the window; `envelope_percentile`: that
   * percentile of it; `fixed`: `tokens`. A request's `max_tokens` caps every mode, and
   * `max_tokens` mode predicts exactly it (worst case, for strict budgets).
   */
  mode: z._default(z.enum(["envelope_mean", "envelope_percentile", "max_tokens", "fixed"]), "envelope_mean"),
  percentile: z._default(percentile, 90),
  /** Prediction with no samples yet, and for `fixed`. */
  tokens: z._default(z.int().check(z.positive(), atMost(MAX_OUTPUT_TOKENS_ASKED, "output tokens")), DEFAULT_OUTPUT_TOKENS),
});

/** Algorithm knobs of one RouteWise model. */
export const RouterParamsSchema = z.strictObject({
  /**
   * The linear program's cost budget: expected cost per request ≤ cheapest + α × (dearest −
   * cheapest), the cheapest and dearest splits of traffic the feasible routes' caps allow
   * (src/core/routewise/lp.ts). 0 buys the cheapest split; 1 leaves
   * latency free to decide.
   */
  budget_alpha: z._default(z.number().check(z.minimum(0), z.maximum(1)), DEFAULT_BUDGET_ALPHA),
  /**
   * `off`; `percentile`: re-send to the next-best route when the chosen one has sent no
   * first byte by its own TTFT at `latency_slo_percentile`; `slo`: … by `latency_slo_ms`.
   * The first to answer wins, the other is aborted; both are paid for.
   */
  latency_hedge_mode: z._default(z.enum(["off", "percentile", "slo"]), "off"),
  /** Time-to-first-byte objective; a route whose recent TTFT at the SLO percentile exceeds it is avoided while another meets it. Absent: no SLO. */
  latency_slo_ms: z.optional(z.int().check(z.positive(), atMost(MAX_REQUEST_MS, "ms: an hour"))),
  latency_slo_percentile: z._default(percentile, DEFAULT_LATENCY_SLO_PERCENTILE),
  /** The recent window the SLO (and the hedge delay) is judged over, seconds. */
  latency_window_s: z._default(windowS, DEFAULT_LATENCY_WINDOW_S),
  /** Percentiles computed per route for TTFT, total latency and output tokens. */
  envelope_percentiles: z._default(z.array(percentile).check(z.minLength(1)), DEFAULT_ENVELOPE_PERCENTILES),
  envelope_window_s: z._default(windowS, DEFAULT_ENVELOPE_WINDOW_S),
  /** Samples each route needs before a quota-bearing model serves (503 until then). */
  envelope_min_samples: z._default(z.int().check(z.minimum(1), atMost(MAX_ENVELOPE_MIN_SAMPLES, "samples a route keeps")), DEFAULT_ENVELOPE_MIN_SAMPLES),
  output_predictor: z._default(OutputPredictorSchema, () => OutputPredictorSchema.parse({})),
  /** Price the share of prompt tokens a route reports cached at its `cached_input` price. */
  prefix_cache: z._default(z.boolean(), false),
});

export const PricingSchema = z.strictObject({
  /** Currency per prompt token (e.g. 0.0000025 for $2.50 per million). */
  input: perToken,
  output: perToken,
  /** Per cached prompt token; absent: cached tokens cost `input`. */
  cached_input: z.optional(perToken),
});

/**
 * Where a quota's truth lives: the provider's usage API, polled by the quota's Durable
 * Object. Used and limit are read with GJSON paths; the window resets at `reset_path`'s
 * time when given, else every `window_s` from the first poll.
 */
export const QuotaSourceSchema = z.strictObject({
  url: httpUrl,
  /** Sent as `Authorization: Bearer`; usually a `${SECRET}`. Empty means none, so `${KEY:-}` makes it optional. */
  auth: z.pipe(
    z.optional(z.string()),
    z.transform((key: string | undefined) => (key === "" ? undefined : key)),
  ),
  used_path: gjsonPath,
  /** Absent: the route's `quota.limit`. */
  limit_path: z.optional(gjsonPath),
  /** Epoch seconds (or an ISO time) when the window resets. */
  reset_path: z.optional(gjsonPath),
  /** `fixed`: usage drops to 0 at reset; `rolling`: usage ages out over `window_s` (no reset time). */
  window: z._default(z.enum(["fixed", "rolling"]), "fixed"),
  window_s: windowS,
  poll_s: z._default(z.int().check(z.minimum(5), atMost(MAX_PERIOD_S, "s: a day")), DEFAULT_QUOTA_POLL_S),
  timeout_ms: z._default(z.int().check(z.positive(), atMost(MAX_PROBE_TIMEOUT_MS, "ms: a minute")), DEFAULT_QUOTA_TIMEOUT_MS),
  /** Fail safe: with no successful poll for this long, the quota counts as exhausted. */
  stale_after_s: z._default(windowS, DEFAULT_QUOTA_STALE_S),
});

/** One provider a RouteWise model can be sent to. */
export const ProviderRouteSchema = z
  .strictObject({
    id: z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/, { error: "route id must be 1-128 characters of letters, digits and . _ : / @ -" })),
    /** The provider's base URL; the request's own API path is joined to it. */
    url: httpUrl,
    api_key: z.pipe(
      z.optional(z.string()),
      z.transform((key: string | undefined) => (key === "" ? undefined : key)),
    ),
    /** The model name this provider expects, when it differs from the public one. */
    upstream_model: z.optional(z.string().check(z.minLength(1))),
    /**
     * `on_demand`: pay per token; `quota`: prepaid tokens or requests, free until the
     * quota is used up, then unusable; `concurrency`: a subscription with a number of
     * parallel slots, usable only while a slot is free.
     */
    provider_type: z.enum(["on_demand", "quota", "concurrency"]),
    /** Required for on_demand; for a concurrency route, its per-token price if any (else free). A quota route's is shown but not charged: its capacity is prepaid. */
    pricing: z.optional(PricingSchema),
    quota: z.optional(z.strictObject({ limit: z.int().check(z.positive()), unit: z._default(z.enum(["tokens", "requests"]), "tokens") })),
    quota_source: z.optional(QuotaSourceSchema),
    concurrency: z.optional(z.strictObject({ limit: z.int().check(z.positive(), atMost(MAX_COUNT, "parallel requests")) })),
    /** Routes with the same id share one quota (one subscription): they decrement it together. */
    quota_pool: z.optional(poolId),
    /** Routes with the same id share one set of concurrency slots. */
    concurrency_pool: z.optional(poolId),
    /**
     * The API the provider answers (absent: chat completions). `anthropic`: Anthropic's
     * Messages API, its `api_key` sent as `x-api-key` (docs/dialects.md).
     */
    dialect: z.optional(z.enum(["chat", "anthropic"])),
  })
  .check(
    z.superRefine((route, ctx) => {
      const need = (key: keyof typeof route, why: string) => {
        if (route[key] === undefined) ctx.addIssue({ code: "custom", path: [key], message: `is required: ${why}` });
      };
      const refuse = (key: keyof typeof route, why: string) => {
        if (route[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: why });
      };
      if (route.provider_type === "on_demand") need("pricing", "an on_demand route is paid per token");
      if (route.provider_type === "quota") {
        need("quota", "a quota route states its limit");
        need("quota_source", "the provider's usage API is the truth for a quota");
      } else {
        for (const key of ["quota", "quota_source", "quota_pool"] as const) refuse(key, "applies to provider_type quota only");
      }
      if (route.provider_type === "concurrency") need("concurrency", "a concurrency route states its slots");
      else for (const key of ["concurrency", "concurrency_pool"] as const) refuse(key, "applies to provider_type concurrency only");
    }),
  );

export type RouterParams = z.output<typeof RouterParamsSchema>;
export type ProviderRoute = z.output<typeof ProviderRouteSchema>;
export type Pricing = z.output<typeof PricingSchema>;
export type QuotaSource = z.output<typeof QuotaSourceSchema>;
export type OutputPredictor = z.output<typeof OutputPredictorSchema>;
