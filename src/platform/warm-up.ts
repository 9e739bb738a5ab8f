import { loadDocuments } from "../core/config/documents";
import { buildSnapshot } from "../core/targets/snapshot";

/**
 * Config shapes that touch most of the schema: the native form (a scoring pool, a
 * weighted pool, a graph, a RouteWise model with each provider type, client keys) and
 * seed 004's `routing.yaml`. URLs are placeholders; nothing here is ever served.
 */
export const WARM_UP_DOCUMENTS: readonly unknown[] = [
  {
    models: {
      chat: { pool: "chat" },
      plain: { pool: "plain" },
      ensemble: { graph: "ensemble" },
      priced: {
        router: "routewise",
        router_params: { budget_alpha: 0.25, latency_hedge_mode: "percentile", output_predictor: { mode: "envelope_percentile", percentile: 90 } },
        routes: [
          { id: "ondemand", provider_type: "on_demand", url: "https://ondemand.invalid/v1", upstream_model: "m", pricing: { input: 0.000001, output: 0.000002 } },
          {
            id: "prepaid",
            provider_type: "quota",
            url: "https://prepaid.invalid/v1",
            quota: { limit: 1000, unit: "tokens" },
            quota_source: { url: "https://prepaid.invalid/usage", used_path: "used", window: "fixed", window_s: 86400 },
          },
          { id: "reserved", provider_type: "concurrency", url: "https://reserved.invalid/v1", concurrency: { limit: 2 } },
        ],
      },
    },
    pools: {
      chat: {
        policy: "switchyard",
        metrics: { scrape_ms: 1000 },
        queue: { max_waiting: 8, ttl_ms: 1000 },
        max_ongoing_requests: 4,
        replicas: [
          { id: "a", url: "http://a.invalid", weight: 1, labels: ["l"] },
          { id: "b", url: "http://b.invalid", weight: 1 },
        ],
      },
      plain: { replicas: [{ id: "a", url: "http://a.invalid" }] },
    },
    routing: { try_timeout_ms: 1000, deadline_ms: 2000, retry_on: [503] },
    graphs: {
      ensemble: { nodes: { root: { routerType: "Ensemble", steps: [{ name: "a", serviceUrl: "http://a.invalid/v1/chat/completions" }] } } },
    },
  },
  {
    routing_strategy: "fixed",
    routing_parameter: { local_fraction: 0.6, timeout: 2, health_check: 30 },
    local_deployment: [{ endpoint: "http://local.invalid", models: ["m"] }],
    remote_deployment: [{ endpoint: "https://remote.invalid/v1", models: ["m"] }],
  },
];

/**
 * Run the config path once on placeholder configs, at the isolate's start.
 *
 * A fresh isolate's first request used to spend most of its CPU (about 5 of 7 ms) in the
 * config's first validation: not in the data, which takes under a millisecond once warm,
 * but in the schema library's one-time setup and in code V8 runs for the first time.
 * Cloudflare starts an isolate while the TLS handshake of the request that needs it is
 * still running, so work done at start is mostly hidden; work done in the first request
 * is not. The real config is still validated in full when it is read (config-source.ts).
 *
 * Never throws: a warm-up that fails only leaves the first request as slow as before
 * (test/unit/warm-up.test.ts keeps the documents valid).
 */
export function warmUpConfigPath(): boolean {
  try {
    let ok = true;
    for (const document of WARM_UP_DOCUMENTS) {
      const result = loadDocuments([document], {});
      if (!result.ok) {
        ok = false;
        continue;
      }
      buildSnapshot({ version: "warm-up", source: "warm-up", config: result.config, clientKeyDigests: [], redactions: result.redactions, loadedAt: 0 });
    }
    return ok;
  } catch {
    return false;
  }
}
