/**
 * The rows the bench compares and the router config of each: fixed-ratio splits (a plain
 * Switchyard pool, `policy: weighted`, the seed's "60/40" style) and RouteWise models
 * over the same four providers at several cost budgets, with and without hedging.
 */
import { loadConfig } from "../../src/core/config/load";
import type { ProviderId, ProviderSpec } from "./providers";
import { ROW_NAMES, type RowName } from "./options";
export { ROW_NAMES, type RowName };

export const MODEL = "bench-chat";
const POOL = "fixed";
const QUOTA_POLL_S = 5; // the schema's minimum: the freshest usage the router can have


export type Row =
  | { name: RowName; kind: "fixed"; label: string; weights: Partial<Record<ProviderId, number>> }
  | { name: RowName; kind: "routewise"; label: string; alpha: number; hedgeSloMs: number | null };

/** The hedge row's SLO: three times the cheap provider's usual time to first token. */
export function hedgeSloMs(specs: readonly ProviderSpec[]): number {
  const cheap = specs.find((s) => s.id === "cheap");
  return 3 * (cheap?.behaviour.ttftMs ?? 0);
}

export function rowOf(name: RowName, specs: readonly ProviderSpec[]): Row {
  const routewise = (alpha: number, hedge: boolean): Row => {
    const slo = hedge ? hedgeSloMs(specs) : null;
    return { name, kind: "routewise", label: `routewise α=${alpha}${slo === null ? "" : `, hedge at ${slo} ms`}`, alpha, hedgeSloMs: slo };
  };
  switch (name) {
    case "fixed-60-40":
      return { name, kind: "fixed", label: "fixed 60/40 cheap/fast", weights: { cheap: 60, fast: 40 } };
    case "fixed-all":
      return { name, kind: "fixed", label: "fixed 35/25/25/15 cheap/fast/sub/slots", weights: { cheap: 35, fast: 25, sub: 25, slots: 15 } };
    case "alpha-0":
      return routewise(0, false);
    case "alpha-0.25":
      return routewise(0.25, false);
    case "alpha-0.5":
      return routewise(0.5, false);
    case "alpha-1":
      return routewise(1, false);
    case "alpha-0.25-hedge":
      return routewise(0.25, true);
  }
}

/** A per-token price as YAML reads it back exactly (no exponent, which YAML 1.1 readers may take for a string). */
export function decimal(x: number): string {
  const fixed = x.toFixed(15).replace(/0+$/, "");
  return fixed.endsWith(".") ? `${fixed}0` : fixed;
}

/**
 * The router config of one row. Both kinds turn session affinity off: every request of
 * the bench comes from one client address, which would pin them all to one replica.
 */
export function routerConfig(row: Row, specs: readonly ProviderSpec[], urls: ReadonlyMap<ProviderId, string>, probes: number): string {
  const url = (id: ProviderId) => {
    const u = urls.get(id);
    if (u === undefined) throw new Error(`no URL for provider ${id}`);
    return u;
  };
  const routing = "routing:\n  affinity: { enabled: false }\n";
  if (row.kind === "fixed") {
    const replicas = specs
      .filter((s) => (row.weights[s.id] ?? 0) > 0)
      .map((s) => `      - { id: ${s.id}, url: "${url(s.id)}", weight: ${row.weights[s.id]} }`);
    return `models:\n  ${MODEL}: { pool: ${POOL} }\npools:\n  ${POOL}:\n    policy: weighted\n    replicas:\n${replicas.join("\n")}\n${routing}`;
  }
  const params = [
    `budget_alpha: ${row.alpha}`,
    `envelope_min_samples: ${probes}`,
    row.hedgeSloMs === null ? "latency_hedge_mode: off" : `latency_hedge_mode: slo, latency_slo_ms: ${row.hedgeSloMs}, latency_slo_percentile: 50`,
  ];
  const routes = specs.map((s) => {
    const fields = [`id: ${s.id}`, `url: "${url(s.id)}"`, `provider_type: ${s.type}`];
    if (s.price) fields.push(`pricing: { input: ${decimal(s.price.input)}, output: ${decimal(s.price.output)} }`);
    if (s.type === "quota") {
      const windowS = Math.round((s.behaviour.quotaWindowMs ?? 0) / 1000);
      fields.push(
        `quota: { limit: ${s.behaviour.quotaLimit}, unit: tokens }`,
        `quota_source: { url: "${url(s.id)}/usage", used_path: data.used, limit_path: data.limit, reset_path: data.reset_at, window_s: ${windowS}, poll_s: ${QUOTA_POLL_S} }`,
      );
    }
    if (s.type === "concurrency") fields.push(`concurrency: { limit: ${s.behaviour.concurrencyLimit} }`);
    return `      - { ${fields.join(", ")} }`;
  });
  return `models:\n  ${MODEL}:\n    router: routewise\n    router_params: { ${params.join(", ")} }\n    routes:\n${routes.join("\n")}\n${routing}`;
}

/** Null when the router's own loader (the code the Worker runs) accepts the row's config; else its errors. */
export function configProblems(text: string): string | null {
  const result = loadConfig(text, {});
  return result.ok ? null : result.errors.map((e) => `${e.path}: ${e.message}`).join("; ");
}
