import type { Pricing, ProviderType, RouteInput } from "./types";

/** What tokens cost at a route's prices: cached prompt tokens at `cached_input` when the provider prices them, else at `input`. */
function tokenCost(pricing: Pricing, uncachedPrompt: number, cachedPrompt: number, output: number): number {
  return pricing.input * uncachedPrompt + (pricing.cached_input ?? pricing.input) * cachedPrompt + pricing.output * output;
}

/**
 * What one request is expected to cost on a route, before it is sent. `on_demand` and
 * priced `concurrency` routes pay per token; the share of the prompt the route has been
 * reporting cached (its envelope's cachedRatio) is priced at `cached_input`, but only
 * with `prefix_cache` on, since only then does the router keep prompts where their
 * prefix is warm. `quota` capacity is prepaid: free until it runs out, and an exhausted
 * quota makes the route infeasible (decide.ts), not dear. A route with no pricing (an
 * unpriced concurrency subscription) costs 0; the schema requires pricing for on_demand.
 */
export function expectedCost(route: RouteInput, tokens: { prompt: number; output: number }, params: { prefixCache: boolean }): number {
  if (route.type === "quota" || !route.pricing) return 0;
  const cached = params.prefixCache && route.envelope ? tokens.prompt * route.envelope.cachedRatio : 0;
  return tokenCost(route.pricing, tokens.prompt - cached, cached, tokens.output);
}

/** A served request's usage as the provider reported it; `promptTokens` includes `cachedTokens` (OpenAI's usage shape). */
export interface Usage {
  promptTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

/**
 * What a served request cost, for spend accounting. Cached tokens are priced at
 * `cached_input` whatever `prefix_cache` says: that flag steers the router's estimate,
 * while the provider bills what it actually cached. Quota routes cost 0 (prepaid).
 */
export function actualCost(pricing: Pricing | undefined, type: ProviderType, usage: Usage): number {
  if (type === "quota" || !pricing) return 0;
  const cached = Math.min(Math.max(0, usage.cachedTokens), usage.promptTokens); // a provider reporting more cached than prompt tokens bills no more than the prompt
  return tokenCost(pricing, usage.promptTokens - cached, cached, usage.outputTokens);
}
