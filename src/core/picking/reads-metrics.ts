import type { FilterName } from "./filters/index";
import type { GuardName } from "./guards/index";
import type { PolicyName } from "./policies";
import { POLICIES } from "./policies";
import type { Profile } from "./profile";

/**
 * Whether a policy routes on the engines' own metrics (queue, KV usage, LoRA slots), so
 * that a pool naming it is scraped without a `metrics:` key (config/schema.ts). The
 * plugins that read them: the `lora` and `saturation` filters, the `stale_metrics` guard,
 * and every scorer section, since a pool's `scoring.weights` may turn on the queue,
 * kv_cache and lora scorers. The pickers and the other guards read leases and the prefix
 * index only. test/unit/reads-metrics.test.ts checks this against what each policy does.
 */
const METRIC_FILTERS: ReadonlySet<FilterName> = new Set(["lora", "saturation"]);
const METRIC_GUARDS: ReadonlySet<GuardName> = new Set(["stale_metrics"]);

function profileReadsMetrics(profile: Profile): boolean {
  return profile.scorers !== null || profile.filters.some((f) => METRIC_FILTERS.has(f)) || profile.guards.some((g) => METRIC_GUARDS.has(g));
}

export function readsEngineMetrics(name: PolicyName): boolean {
  return profileReadsMetrics(POLICIES[name]);
}
