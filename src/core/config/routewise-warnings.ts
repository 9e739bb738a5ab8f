import type { ConfigIssue } from "./issues";
import { formatPath } from "./issues";
import { DEFAULT_ENVELOPE_MIN_SAMPLES } from "./routewise-schema";
import type { Config } from "./schema";

/**
 * A valid config that will not serve yet: a RouteWise model with a quota route answers
 * 503 `routewise_uncalibrated` until every route's latency envelope holds
 * `envelope_min_samples` samples (src/app/model-call/provider-set.ts). A new deployment has
 * none, so `switchyard validate` says so, and how to seed them, before the first 503 does.
 */
export function routeWiseWarnings(config: Config): ConfigIssue[] {
  const warnings: ConfigIssue[] = [];
  for (const [model, target] of Object.entries(config.models)) {
    if (target.router !== "routewise" || !target.routes?.some((route) => route.provider_type === "quota")) continue;
    const samples = target.router_params?.envelope_min_samples ?? DEFAULT_ENVELOPE_MIN_SAMPLES;
    warnings.push({
      path: formatPath(["models", model]),
      message:
        `has quota routes, so it answers 503 (routewise_uncalibrated) until every route has envelope_min_samples (${samples}) latency samples; ` +
        `seed them with \`switchyard calibrate ${model} --url <router>\` or POST /admin/routewise/${model}/calibrate`,
    });
  }
  return warnings;
}
