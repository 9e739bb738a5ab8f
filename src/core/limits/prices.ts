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

function perToken(p: ModelPricing): TokenPrices {
  return { input: p.input / 1e6, output: p.output / 1e6, cachedInput: (p.cached_input ?? p.input) / 1e6 };
}

/** What tokens cost: cached prompt tokens at their price, the rest of the prompt at input's. */
export function costOf(prices: TokenPrices, promptTokens: number, cachedTokens: number, outputTokens: number): number {
  const cached = Math.min(Math.max(0, cachedTokens), promptTokens);
  return prices.input * (promptTokens - cached) + prices.cachedInput * cached + prices.output * outputTokens;
}
