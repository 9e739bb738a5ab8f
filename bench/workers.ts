/**
 * The bench's Workers: the bare pass-through and the router variants. Every one runs on
 * its own workerd through Miniflare and answers on Miniflare's direct socket
 * (tools/cli/direct-socket.ts), so no row pays for Miniflare's entry Worker and all stand
 * on the same footing. Building and starting are separate so the cold-start samples
 * time only the start.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { V4WorkerOptions } from "miniflare";
import type { RouterBuild } from "../tools/cli/runtime";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PASSTHROUGH_SOURCE = path.join(HERE, "passthrough-worker.ts");
/** The bare body-routing Worker: the floor the router's ratios are stated against. */
export const BODY_ROUTING_SOURCE = path.join(HERE, "body-routing-worker.ts");
const SEED004_YAML = path.join(HERE, "..", "examples", "seed004-routing.yaml");

/** The model of seed 004's routing.yaml, which every row asks for. */
export const MODEL = "llama-3-8b";
/** The keyed row's client key; its config holds only the sha256 digest, as a user's would. */
export const CLIENT_KEY = "sk-bench-client-key";
/** Read by the router at its state seam: every Durable Object call waits this long first. */
export const SIMULATED_DO_RTT_VAR = "SWITCHYARD_SIMULATED_DO_RTT_MS";

export interface Started {
  url: string;
  dispose(): Promise<void>;
}

/** The pass-through compiled, with the router's compatibility date and flags from wrangler.toml. */
export async function buildPassthrough(upstreamUrl: string, source = PASSTHROUGH_SOURCE): Promise<V4WorkerOptions> {
  return buildBareWorker(source, { UPSTREAM_URL: upstreamUrl });
}

/** The body-routing Worker: its two upstreams are the router's two seed-004 replicas, both on the fake upstream. */
export function buildBodyRouting(upstreamUrl: string): Promise<V4WorkerOptions> {
  const { local, remote } = replicaUrls(upstreamUrl);
  return buildBareWorker(BODY_ROUTING_SOURCE, { UPSTREAM_LOCAL: `${local}/v1`, UPSTREAM_REMOTE: remote, MODEL });
}

async function buildBareWorker(source: string, bindings: Record<string, string>): Promise<V4WorkerOptions> {
  const [esbuild, wrangler, { WRANGLER_TOML }] = await Promise.all([import("esbuild"), import("wrangler"), import("../tools/cli/paths")]);
  const config = wrangler.unstable_readConfig({ config: WRANGLER_TOML });
  if (!config.compatibility_date) throw new Error(`${WRANGLER_TOML} has no compatibility_date`);
  const { code } = await esbuild.transform(await readFile(source, "utf8"), { loader: "ts", format: "esm", target: "es2022" });
  return {
    name: `bench-${path.basename(source, ".ts")}`,
    modules: [{ type: "ESModule", path: source.replace(/\.ts$/, ".mjs"), contents: code }],
    compatibilityDate: config.compatibility_date,
    compatibilityFlags: config.compatibility_flags,
    bindings,
  };
}

/** port 0: any free port, picked by workerd. */
export async function startPassthrough(options: V4WorkerOptions, port = 0): Promise<Started> {
  const { startOnDirectSocket } = await import("../tools/cli/direct-socket");
  return startOnDirectSocket(options, { host: "127.0.0.1", port });
}

/**
 * The two replicas of every router row: the one fake upstream, once as a server root and
 * once as an OpenAI-style base ending in /v1 (both reach /v1/chat/completions), so the
 * router picks between two replicas as it does for users, with one upstream process.
 */
export function replicaUrls(upstreamUrl: string): { local: string; remote: string } {
  return { local: upstreamUrl, remote: `${upstreamUrl}/v1` };
}

/**
 * Seed 004's routing.yaml as users run it (examples/seed004-routing.yaml, unchanged):
 * model llama-3-8b, 60% to the local endpoint, 40% to the remote one, health checks
 * every 30 s, affinity on by default, no client keys. Its endpoints come from the vars
 * of {@link seed004Vars}. The stateless variant adds `routing: { shared_state: false }`,
 * which the seed format accepts beside its own keys.
 */
export async function seed004Config(stateful: boolean): Promise<string> {
  const text = await readFile(SEED004_YAML, "utf8");
  return stateful ? text : `${text}routing:\n  shared_state: false\n`;
}

export function seed004Vars(upstreamUrl: string): Record<string, string> {
  const { local, remote } = replicaUrls(upstreamUrl);
  return { LOCAL_DEPLOYMENT_URL: local, REMOTE_DEPLOYMENT_URL: remote };
}

/**
 * The same two replicas 60/40 written in Switchyard's own models:/pools: form, with
 * affinity on (the default) and client keys on: every request must carry
 * `Authorization: Bearer CLIENT_KEY`, and affinity keys the client by that key.
 * With `limits`, the same config plus prices and a rule on that key with every kind of
 * limit (docs/limits.md), each {@link BENCH_LIMITS} high enough never to refuse: the
 * cost of counting, not of refusing.
 */
export function keyedConfig(upstreamUrl: string, limits = false): string {
  const { local, remote } = replicaUrls(upstreamUrl);
  const digest = createHash("sha256").update(CLIENT_KEY).digest("hex");
  const l = BENCH_LIMITS;
  return `models:
  ${MODEL}: { pool: gpu${limits ? ", pricing: { input: 1, output: 1 }" : ""} }
pools:
  gpu:
    replicas:
      - { id: local-0, url: "${local}", weight: 3, labels: [local] }
      - { id: remote-0, url: "${remote}", weight: 2, labels: [remote] }
routing:
  affinity: { enabled: true }
auth:
  client_keys: ["sha256:${digest}"]
${
  limits
    ? `limits:
  - { key: "client_keys[0]", requests_per_minute: ${l.requestsPerMinute}, tokens_per_minute: ${l.tokensPerMinute}, concurrent_requests: ${l.concurrentRequests}, spend: { amount: ${l.spend}, window: day } }
`
    : ""
}`;
}

/**
 * The limits row's limits. The bench's requests set no max_tokens, so each reserves
 * about 4,100 tokens (4,096 per answer, docs/limits.md) and, at 1 per million tokens,
 * about 0.0041 of spend; a few thousand req/s for the bench's minutes stays far below each.
 */
export const BENCH_LIMITS = {
  requestsPerMinute: 100_000_000, // requests/min: ~30,000x the bench's ~3,000 req/s
  tokensPerMinute: 100_000_000_000, // tokens/min: ~100x 3,000 req/s × 4,100 tokens × 60 s
  concurrentRequests: 100_000, // requests in flight: the bench has --concurrency (16) at once
  spend: 1_000_000_000, // currency per UTC day: ~1,000x what a day of 3,000 req/s would reserve
} as const;

/** Worker vars of a router variant: the simulated round trip, when there is one. */
export function routerVars(upstreamUrl: string, doRttMs?: number): Record<string, string> {
  return { ...seed004Vars(upstreamUrl), ...(doRttMs === undefined ? {} : { [SIMULATED_DO_RTT_VAR]: String(doRttMs) }) };
}

/**
 * Whether the router's code reads the simulated-RTT var at all: a row run with the var
 * set but never read would look like a free round trip, so the bench says so instead.
 */
export function routerReadsSimulatedRtt(build: RouterBuild): boolean {
  return build.script.contents.includes(SIMULATED_DO_RTT_VAR);
}
