/**
 * The router under test: the real Worker on workerd (tools/cli/runtime.ts, as `npm run
 * bench` and `switchyard serve` start it), one pool over the fleet, the policy named by
 * the row, replicas' /metrics scraped on the pool object's alarm, session affinity off
 * so the policy alone decides where each request goes.
 */
import type { Router, RouterBuild } from "../../tools/cli/runtime";
import { loadConfig } from "../../src/core/config/load";
import type { PolicyName } from "../../src/core/picking/policies";

/**
 * Every policy of the router's registry (src/core/picking/policies.ts), in report order:
 * the baselines, then the load-aware, then the prefix-aware. A name given with
 * `--policies` that the router does not know is skipped with a message.
 */
export const POLICIES = ["weighted", "random", "round_robin", "power_of_two", "least_loaded", "gaie", "ray_prefix", "sglang_cache_aware", "switchyard"] as const satisfies readonly PolicyName[];

/**
 * `weighted`, the router's default, picks uniformly at random with the equal weights
 * used here: the same policy as `random`. The default list runs it only while the router
 * does not know `random`, so a full run does not pay for the same rows twice.
 */
export const STAND_INS: Record<string, string> = { weighted: "random" };

/** The list without stand-ins whose policy is in it and known to the router. */
export function withoutStandIns(policies: readonly string[], known: (policy: string) => boolean): string[] {
  return policies.filter((p) => {
    const real = STAND_INS[p];
    return real === undefined || !(policies.includes(real) && known(real));
  });
}

export const MODEL = "quality-model";
export const POOL = "fleet";
/** The bench router's admin token: only 127.0.0.1 reaches it, and /routing needs one. */
const ADMIN_TOKEN = "bench-quality-admin";

export interface RouterKnobs {
  scrapeMs: number;
}

export function routerConfig(policy: string, replicas: readonly { id: string; url: string }[], knobs: RouterKnobs): string {
  return `models:
  ${MODEL}: { pool: ${POOL} }
pools:
  ${POOL}:
    policy: ${policy}
    metrics: { scrape_ms: ${knobs.scrapeMs} }
    replicas:
${replicas.map((r) => `      - { id: ${r.id}, url: "${r.url}" }`).join("\n")}
routing:
  affinity: { enabled: false }
`;
}

/**
 * Whether the router's own config loader (the code the Worker runs, from the same
 * tree) accepts `policy`: null if so, else why not. Any other rejection is a bug of
 * the bench and throws.
 */
export function policyRejection(policy: string, knobs: RouterKnobs): string | null {
  const placeholder = [{ id: "r0", url: "http://127.0.0.1:9" }];
  const result = loadConfig(routerConfig(policy, placeholder, knobs), {});
  if (result.ok) return null;
  const onPolicy = result.errors.filter((e) => e.path.endsWith(".policy"));
  if (onPolicy.length === result.errors.length) return onPolicy.map((e) => `${e.path}: ${e.message}`).join("; ");
  throw new Error(`the bench's router config is invalid: ${result.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
}

/** Thrown when the running router answers that it has no valid config (it rejected ours). */
export class ConfigRejected extends Error {}

export async function startQualityRouter(build: RouterBuild, configText: string, persistTo: string): Promise<Router> {
  const { startRouter } = await import("../../tools/cli/runtime");
  return startRouter({ port: 0, build, configText, persistTo, vars: { ADMIN_TOKEN } });
}

/**
 * The router's own expected hit rate for the row: blocks its prefix index expected the
 * chosen replica to hold ÷ blocks looked up, over every attempt the answering isolate
 * sent (/routing's `prefix_index`; workerd runs one isolate here). Undefined for a policy
 * that reads no prompts (no index), or when /routing does not say.
 */
export async function expectedHitRate(url: string, timeoutMs: number): Promise<number | undefined> {
  try {
    const res = await fetch(`${url}/routing`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return undefined;
    const view = (await res.json()) as { models?: Record<string, { prefix_index?: { expected_hit_blocks: number; looked_up_blocks: number } | null }> };
    const index = view.models?.[MODEL]?.prefix_index;
    return index && index.looked_up_blocks > 0 ? index.expected_hit_blocks / index.looked_up_blocks : undefined;
  } catch {
    return undefined; // a column left blank, not a row lost
  }
}

/**
 * One tiny request through the router before any load: it must reach a replica. The
 * prompt is shorter than one KV block, so no cache learns anything from it.
 */
export async function checkRouter(url: string, timeoutMs: number): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": "127.0.0.1" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "ping" }], max_tokens: 1 }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (res.status === 503 && text.includes("no valid config")) throw new ConfigRejected(messageOf(text));
  if (!res.ok || !res.headers.has("x-switchyard-replica")) throw new Error(`the router's check request answered ${res.status}: ${text.slice(0, 300)}`);
}

function messageOf(body: string): string {
  try {
    return (JSON.parse(body) as { error: { message: string } }).error.message;
  } catch {
    return body.slice(0, 300);
  }
}
