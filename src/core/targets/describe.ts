import type { ProviderRoute } from "../config/routewise-schema";
import { DEFAULT_BUDGET_ALPHA } from "../config/routewise-schema";
import type { Config } from "../config/schema";
import { buildRouteTable } from "./route-table";

/** Human summary for `switchyard validate`: every model, its pool and each replica's share, or its RouteWise routes. */
export function describeConfig(config: Config): string {
  const lines: string[] = [];
  const table = buildRouteTable(config);
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  lines.push(`${count(Object.keys(config.models).length, "model")}, ${count(Object.keys(config.pools).length, "pool")}, ${count(Object.keys(config.graphs).length, "graph")}`);
  for (const route of table.values()) {
    lines.push(`  ${route.model} -> pool ${route.pool}${route.upstreamModel ? ` (as ${route.upstreamModel})` : ""}`);
    for (const r of route.replicas) {
      const labels = r.labels.length > 0 ? ` [${r.labels.join(", ")}]` : "";
      lines.push(`    ${r.id}${labels} ${(r.share * 100).toFixed(1)}%${r.weight === 0 ? " (excluded: weight 0)" : ""}`);
    }
  }
  for (const [model, target] of Object.entries(config.models)) {
    if (target.router !== "routewise" || !target.routes) continue;
    const params = target.router_params;
    const hedge = params?.latency_hedge_mode ?? "off";
    const slo = params?.latency_slo_ms !== undefined ? `, SLO ${params.latency_slo_ms} ms at p${params.latency_slo_percentile}` : "";
    lines.push(`  ${model} -> routewise over ${count(target.routes.length, "route")} (alpha ${params?.budget_alpha ?? DEFAULT_BUDGET_ALPHA}, hedge ${hedge}${slo})`);
    for (const route of target.routes) lines.push(`    ${route.id}: ${describeRoute(route)}`);
  }
  const t = config.routing;
  lines.push(`  routing: try ${t.try_timeout_ms} ms, deadline ${t.deadline_ms} ms, retry on ${t.retry_on.join("/")}, body <= ${t.max_body_bytes} bytes`);
  for (const [name, graph] of Object.entries(config.graphs)) {
    const models = Object.entries(config.models).filter(([, t]) => t.graph === name).map(([m]) => m);
    lines.push(`  graph ${name} at /graphs/${name}${models.length > 0 ? ` (models: ${models.join(", ")})` : ""}`);
    for (const [nodeName, node] of Object.entries(graph.nodes)) {
      lines.push(`    ${nodeName}: ${node.routerType}${node.router ? ` (${node.router.type})` : ""}, ${node.steps.length} step${node.steps.length === 1 ? "" : "s"}`);
    }
  }
  const keys = config.auth.client_keys.length + config.auth.keys.length;
  lines.push(`  client keys: ${keys === 0 ? "none (open)" : keys}${config.auth.keys.length > 0 ? ` (named: ${config.auth.keys.map((k) => k.name).join(", ")})` : ""}`);
  if (config.limits.length > 0) lines.push(`  limits: ${config.limits.length} rule${config.limits.length === 1 ? "" : "s"}`);
  return lines.join("\n");
}

/** One RouteWise route for describeConfig: its type, what it has (quota, slots) and its price per million tokens. */
function describeRoute(route: ProviderRoute): string {
  const parts: string[] = [route.provider_type];
  if (route.quota) {
    const window = route.quota_source ? ` per ${route.quota_source.window_s} s (${route.quota_source.window} window)` : "";
    parts.push(`${route.quota.limit} ${route.quota.unit}${window}${route.quota_pool ? `, pool ${route.quota_pool}` : ""}`);
  }
  if (route.concurrency) parts.push(`${route.concurrency.limit} slot${route.concurrency.limit === 1 ? "" : "s"}${route.concurrency_pool ? `, pool ${route.concurrency_pool}` : ""}`);
  if (route.pricing) {
    const perMillion = (perToken: number) => String(Number((perToken * 1e6).toPrecision(12)));
    const cached = route.pricing.cached_input !== undefined ? `, cached ${perMillion(route.pricing.cached_input)}` : "";
    parts.push(`per 1M tokens: input ${perMillion(route.pricing.input)}${cached}, output ${perMillion(route.pricing.output)}`);
  } else parts.push(route.provider_type === "quota" ? "free within the quota" : "free per token");
  return `${parts.join(", ")}${route.upstream_model ? ` (as ${route.upstream_model})` : ""}`;
}
