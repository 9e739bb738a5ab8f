import * as z from "zod/mini";
import { atMost, MAX_COUNT, MAX_PRICE_PER_MILLION, MAX_REQUESTS_PER_MINUTE, MAX_SPEND, MAX_TOKENS_PER_MINUTE } from "./bounds";

/**
 * Named client keys (principals) and the limits on what they may use (docs/limits.md).
 * A key names a principal, optionally in a team; a limit rule is scoped to a key, a team,
 * a model, or a key or team on one model, and may cap requests and tokens per minute,
 * requests at once, and spend per window. Every rule that matches a request applies, so
 * the tightest one refuses first.
 */

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/;
const name = (what: string) =>
  z.string().check(z.regex(NAME, { error: `${what} must be 1-128 characters of letters, digits and . _ : / @ -, starting with a letter or digit` }));

export const ClientKeySchema = z.strictObject({
  /** Shown in headers, logs, /routing and object names: never the key. */
  name: name("key name"),
  /** `sha256:<64 hex>` or a `${VAR}` secret, as `client_keys` entries. */
  key: z.string().check(z.minLength(1)),
  team: z.optional(name("team name")),
  /** The operator's own notes on the key (owner, ticket); never read by the router. */
  metadata: z.optional(z.record(z.string(), z.string())),
  /**
   * True: this key may name an end user with `X-Switchyard-Tenant` (a platform in front
   * of the router), and limits with `per_tenant` count each end user apart.
   */
  trusted_tenant_header: z._default(z.boolean(), false),
});

export const DEFAULT_WARN_AT = 0.9; // warned at 90% used: room for a few more days of a month's pace before refusals start

export const SPEND_WINDOWS = ["hour", "day", "month", "fixed"] as const;
export type SpendWindow = (typeof SPEND_WINDOWS)[number];

export const SpendSchema = z
  .strictObject({
    /** Currency, in the unit the models' prices are written in. */
    amount: z.number().check(z.positive(), atMost(MAX_SPEND, "currency")),
    /** hour, day and month are UTC calendar windows; fixed runs until reset_at, then starts once afresh. */
    window: z.enum(SPEND_WINDOWS),
    /** With `window: fixed`: when the budget starts afresh (an ISO 8601 date or time, UTC unless it says). */
    reset_at: z.optional(z.string()),
    /** The fraction of the budget used from which every answer to the principal carries x-switchyard-budget-warning. */
    warn_at: z._default(z.number().check(z.positive(), z.maximum(1)), DEFAULT_WARN_AT),
  })
  .check(
    z.superRefine((spend, ctx) => {
      if (spend.window === "fixed" && spend.reset_at === undefined) ctx.addIssue({ code: "custom", path: ["reset_at"], message: "is required with window: fixed" });
      if (spend.window !== "fixed" && spend.reset_at !== undefined) ctx.addIssue({ code: "custom", path: ["reset_at"], message: "applies to window: fixed only" });
      if (spend.reset_at !== undefined && !Number.isFinite(Date.parse(spend.reset_at))) ctx.addIssue({ code: "custom", path: ["reset_at"], message: "must be an ISO 8601 date or time, e.g. 2027-01-01T00:00:00Z" });
    }),
  );

export const LimitRuleSchema = z
  .strictObject({
    /** A key's name (`auth.keys[].name`; `client_keys[0]` for an unnamed key). */
    key: z.optional(z.string().check(z.minLength(1))),
    team: z.optional(z.string().check(z.minLength(1))),
    model: z.optional(z.string().check(z.minLength(1))),
    /** With a trusted key's `X-Switchyard-Tenant`: each end user gets this limit of its own. */
    per_tenant: z._default(z.boolean(), false),
    requests_per_minute: z.optional(z.int().check(z.minimum(1), atMost(MAX_REQUESTS_PER_MINUTE, "requests per minute"))),
    /** Input plus output tokens. */
    tokens_per_minute: z.optional(z.int().check(z.minimum(1), atMost(MAX_TOKENS_PER_MINUTE, "tokens per minute"))),
    concurrent_requests: z.optional(z.int().check(z.minimum(1), atMost(MAX_COUNT, "requests at once"))),
    spend: z.optional(SpendSchema),
  })
  .check(
    z.superRefine((rule, ctx) => {
      if (rule.key === undefined && rule.team === undefined && rule.model === undefined) ctx.addIssue({ code: "custom", path: [], message: "must name a key, a team or a model (or a key or team with a model)" });
      if (rule.key !== undefined && rule.team !== undefined) ctx.addIssue({ code: "custom", path: ["team"], message: "a rule is scoped to a key or a team, not both" });
      if (rule.requests_per_minute === undefined && rule.tokens_per_minute === undefined && rule.concurrent_requests === undefined && rule.spend === undefined) {
        ctx.addIssue({ code: "custom", path: [], message: "must set requests_per_minute, tokens_per_minute, concurrent_requests or spend" });
      }
    }),
  );

/** A pool's or graph's model's prices, currency per million tokens (RouteWise routes carry their own, per token). */
export const ModelPricingSchema = z.strictObject({
  input: z.number().check(z.minimum(0), atMost(MAX_PRICE_PER_MILLION, "currency per million tokens")),
  output: z.number().check(z.minimum(0), atMost(MAX_PRICE_PER_MILLION, "currency per million tokens")),
  /** Absent: cached prompt tokens cost `input`. */
  cached_input: z.optional(z.number().check(z.minimum(0), atMost(MAX_PRICE_PER_MILLION, "currency per million tokens"))),
});

export type ClientKey = z.output<typeof ClientKeySchema>;
export type LimitRule = z.output<typeof LimitRuleSchema>;
export type ModelPricing = z.output<typeof ModelPricingSchema>;

/** What the cross-checks read of the whole config. */
interface LimitsConfig {
  auth: { client_keys: string[]; keys: ClientKey[] };
  limits: LimitRule[];
  models: Record<string, { router?: string | undefined; pricing?: ModelPricing | undefined; graph?: string | undefined; routes?: { pricing?: unknown }[] | undefined }>;
  graphs: Record<string, unknown>;
}

/** The unnamed principal of `auth.client_keys[i]`: named by its place in the list, never by the key. */
export const clientKeyName = (index: number): string => `client_keys[${index}]`;

/** Names must be unique; a rule must name a key, team and model the config has; a spend rule's model must be priced. */
export function limitsIssues(config: LimitsConfig, ctx: z.core.$RefinementCtx<unknown>): void {
  const names = new Set(config.auth.client_keys.map((_, i) => clientKeyName(i)));
  const teams = new Set<string>();
  config.auth.keys.forEach((key, i) => {
    if (names.has(key.name)) ctx.addIssue({ code: "custom", path: ["auth", "keys", i, "name"], message: `duplicate key name "${key.name}"` });
    names.add(key.name);
    if (key.team !== undefined) teams.add(key.team);
  });
  config.limits.forEach((rule, i) => {
    const at = (field: string) => ["limits", i, field];
    if (rule.key !== undefined && !names.has(rule.key)) ctx.addIssue({ code: "custom", path: at("key"), message: `unknown key "${rule.key}": name one of auth.keys (or client_keys[i])` });
    if (rule.team !== undefined && !teams.has(rule.team)) ctx.addIssue({ code: "custom", path: at("team"), message: `unknown team "${rule.team}": no key of auth.keys is in it` });
    const model = rule.model === undefined || !Object.hasOwn(config.models, rule.model) ? undefined : config.models[rule.model];
    // A graph's name too: its own path, /graphs/<name>, is limited by rules that name it (limits.md).
    const graph = rule.model !== undefined && model === undefined && Object.hasOwn(config.graphs, rule.model);
    if (rule.model !== undefined && model === undefined && !graph) ctx.addIssue({ code: "custom", path: at("model"), message: `unknown model "${rule.model}": name a model, or a graph` });
    if (rule.spend !== undefined && model !== undefined && !priced(model)) ctx.addIssue({ code: "custom", path: at("spend"), message: `model "${rule.model}" has no prices: give it pricing (per million tokens), or its routes pricing` });
  });
  for (const [model, target] of Object.entries(config.models)) {
    if (target.router === "routewise" && target.pricing !== undefined) ctx.addIssue({ code: "custom", path: ["models", model, "pricing"], message: "a RouteWise model is priced by its routes' pricing" });
  }
}

/** Priced, or a graph: its steps are priced as the models they call (limits.md, "Prices"), which its own rules cannot see. */
function priced(model: LimitsConfig["models"][string]): boolean {
  return model.pricing !== undefined || model.graph !== undefined || (model.routes ?? []).some((r) => r.pricing !== undefined);
}
