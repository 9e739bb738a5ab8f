import type { Config } from "../config/schema";
import type { ModelPricing } from "../config/limits-schema";

/** Currency per token: input, output, and cached input. */
export interface TokenPrices {
  input: number;
  output: number;
  cachedInput: number;
}

export const FREE: TokenPrices = { input: 0, output: 0, cachedInput: 0 };

/**
 * A model's prices for spend limits: its `pricing` (per million tokens), or, for a
 * RouteWise model, the answering route's (per token). `route` absent (a reservation,
 * before any route is chosen): the dearest route's, so a reservation never prices low.
 */
export function pricesOf(config: Config, model: string, route?: string): TokenPrices {
  const target = config.models[model];
  if (target === undefined) return FREE;
  if (target.pricing !== undefined) return perToken(target.pricing);
  const routes = (target.routes ?? []).filter((r) => r.pricing !== undefined && (route === undefined || r.id === route));
  if (routes.length === 0) return FREE;
  const of = (pick: (p: TokenPrices) => number) => Math.max(...routes.map((r) => pick({ input: r.pricing!.input, output: r.pricing!.output, cachedInput: r.pricing!.cached_input ?? r.pricing!.input })));
  return { input: of((p) => p.input), output: of((p) => p.output), cachedInput: of((p) => p.cachedInput) };
}

/**
 * What a graph's request is reserved at: the dearest prices its steps can be charged
 * (src/app/model-call/graph-usage.ts prices a step on a pool as the pool's dearest model),
 * and those of the models that name the graph. A graph without a priced model of its own
 * would otherwise reserve nothing, which fits any spend budget, spent or not.
 */
export function graphPrices(config: Config, graph: string): TokenPrices {
  const spec = Object.hasOwn(config.graphs, graph) ? config.graphs[graph]! : undefined;
  const candidates: TokenPrices[] = [];
  for (const [model, target] of Object.entries(config.models)) if (target.graph === graph) candidates.push(pricesOf(config, model));
  const pools = new Set<string>();
  for (const node of Object.values(spec?.nodes ?? {})) {
    for (const step of node.steps) {
      if (step.pool !== undefined) pools.add(step.pool);
      const service = step.serviceName !== undefined && Object.hasOwn(config.services, step.serviceName) ? config.services[step.serviceName]! : undefined;
      if (service?.pool !== undefined) pools.add(service.pool);
    }
  }
  for (const pool of pools) candidates.push(poolPrices(config, pool));
  return dearest(candidates);
}

/** A step on a pool is priced as the dearest priced model the pool serves (FREE when none is priced). */
export function poolPrices(config: Config, pool: string): TokenPrices {
  return dearest(Object.entries(config.models).flatMap(([model, target]) => (target.pool === pool ? [pricesOf(config, model)] : [])));
}

/** The dearest of some prices by input + output a token, FREE when there are none: a reservation never prices low. */
export function dearest(all: readonly TokenPrices[]): TokenPrices {
  return all.reduce((most, p) => (p.input + p.output > most.input + most.output ? p : most), FREE);
}

function perToken(p: ModelPricing): TokenPrices {
  return { input: p.input / 1e6, output: p.output / 1e6, cachedInput: (p.cached_input ?? p.input) / 1e6 };
}

/** What tokens cost: cached prompt tokens at their price, the rest of the prompt at input's. */
export function costOf(prices: TokenPrices, promptTokens: number, cachedTokens: number, outputTokens: number): number {
  const cached = Math.min(Math.max(0, cachedTokens), promptTokens);
  return prices.input * (promptTokens - cached) + prices.cachedInput * cached + prices.output * outputTokens;
}
