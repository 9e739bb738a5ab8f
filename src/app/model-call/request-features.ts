import type { ModelRoute } from "../../core/targets/route-table";
import type { PolicyName } from "../../core/picking/policies";
import { readsRequests } from "../../core/picking/policies";
import { requestFeatures } from "../../core/picking/prefix/features";
import type { RequestFeatures } from "../../core/picking/scoring/types";

/**
 * What a pool's policy reads of a request, computed only for pools whose policy
 * reads requests (src/core/picking/prefix/features.ts): the prompt's block hashes seeded with
 * the model's KV-cache target, its LoRA adapter, and where it entered (the pool's
 * `locality` keys of `request.cf`).
 */
export function featuresFor(request: Request, route: ModelRoute, policy: PolicyName, locality: readonly string[], apiPath: string, body: unknown): RequestFeatures | undefined {
  if (!readsRequests(policy)) return undefined;
  return requestFeatures({ apiPath, body, target: route.cacheTarget, locality: entryPoint(request, locality) });
}

/** The request's entry point as labels, e.g. `{ colo: "AMS", country: "NL" }`: only the keys the pool matches on. */
function entryPoint(request: Request, keys: readonly string[]): Record<string, string> {
  const cf = (request as { cf?: Record<string, unknown> }).cf; // Cloudflare's entry metadata: absent outside the Workers runtime
  const labels: Record<string, string> = {};
  if (!cf) return labels;
  for (const key of keys) {
    const value = cf[key];
    if (typeof value === "string" && value !== "") labels[key] = value;
  }
  return labels;
}
