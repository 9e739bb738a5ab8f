import type { Config } from "../config/schema";
import type { UrlAtRest } from "../config/redact";
import type { ProviderRoute, RouterParams } from "../config/routewise-schema";
import { RouterParamsSchema } from "../config/routewise-schema";
import { joinNameParts } from "../../lib/name-parts";
import type { EnvelopeSettings, QuotaSpec } from "./wire";

/** A RouteWise model as the request path needs it, derived once per config version. */
export interface RouteWiseSpec {
  model: string;
  params: RouterParams;
  routes: ProviderRoute[];
  settings: EnvelopeSettings;
  /** Quota routes' quota: route id → the quota's object and its terms. */
  quotas: Map<string, QuotaSpec>;
  /** Concurrency routes' slots: route id → the slots' object and limit. */
  slots: Map<string, { id: string; limit: number }>;
  /** A model with a quota route serves only once calibrated (every route at envelope_min_samples). */
  quotaBearing: boolean;
}

/**
 * Routes share a quota or slots through a pool id; a route without one has its own,
 * named by model and route so two models never share by accident: each part escaped
 * (`a%2Fb/c` and `a/b%2Fc`), and a pool id has no `/`, so no two ids meet. `version` is
 * the config's: a quota object keeps the newest version's terms.
 */
export function buildRouteWiseSpecs(config: Config, version: string, atRest: UrlAtRest = () => undefined): Map<string, RouteWiseSpec> {
  const specs = new Map<string, RouteWiseSpec>();
  for (const [model, target] of Object.entries(config.models)) {
    if (target.router !== "routewise" || !target.routes) continue;
    const params = target.router_params ?? RouterParamsSchema.parse({});
    const quotas = new Map<string, QuotaSpec>();
    const slots = new Map<string, { id: string; limit: number }>();
    for (const route of target.routes) {
      const own = joinNameParts(model, route.id);
      if (route.quota && route.quota_source) {
        const urlAtRest = atRest(route.quota_source.url);
        quotas.set(route.id, { id: route.quota_pool ?? own, version, limit: route.quota.limit, unit: route.quota.unit, source: route.quota_source, ...(urlAtRest !== undefined && { urlAtRest }) });
      }
      if (route.concurrency) slots.set(route.id, { id: route.concurrency_pool ?? own, limit: route.concurrency.limit });
    }
    specs.set(model, {
      model,
      params,
      routes: target.routes,
      settings: {
        percentiles: params.envelope_percentiles,
        windowMs: params.envelope_window_s * 1000,
        latencyWindowMs: params.latency_window_s * 1000,
        routes: target.routes.map((r) => r.id),
      },
      quotas,
      slots,
      quotaBearing: quotas.size > 0,
    });
  }
  return specs;
}
