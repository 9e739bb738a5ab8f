/**
 * The bench's Workers: the bare pass-through and the router variants. Every one runs on
 * its own workerd through Miniflare and answers on Miniflare's direct socket
 * (tools/cli/direct-socket.ts), so no row pays for Miniflare's entry Worker and all stand
 * on the same footing. Building and starting are separate so the cold-start samples
 * time only the start.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { V4WorkerOptions } from "miniflare";
import type { RouterBuild } from "../tools/cli/runtime";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PASSTHROUGH_SOURCE = path.join(HERE, "passthrough-worker.ts");
/** The pass-through that reads and parses the body first, as body-based routing must. */
export const BODY_READING_SOURCE = path.join(HERE, "body-reading-worker.ts");

export const MODEL = "bench-model";
/** Read by the router at its state seam: every Durable Object call waits this long first. */
export const SIMULATED_DO_RTT_VAR = "SWITCHYARD_SIMULATED_DO_RTT_MS";

export interface Started {
  url: string;
  dispose(): Promise<void>;
}

/** The pass-through compiled, with the router's compatibility date and flags from wrangler.toml. */
export async function buildPassthrough(upstreamUrl: string, source = PASSTHROUGH_SOURCE): Promise<V4WorkerOptions> {
  const [esbuild, wrangler, { WRANGLER_TOML }] = await Promise.all([import("esbuild"), import("wrangler"), import("../tools/cli/paths")]);
  const config = wrangler.unstable_readConfig({ config: WRANGLER_TOML });
  if (!config.compatibility_date) throw new Error(`${WRANGLER_TOML} has no compatibility_date`);
  const { code } = await esbuild.transform(await readFile(source, "utf8"), { loader: "ts", format: "esm", target: "es2022" });
  return {
    name: `bench-${path.basename(source, ".ts")}`,
    modules: [{ type: "ESModule", path: source.replace(/\.ts$/, ".mjs"), contents: code }],
    compatibilityDate: config.compatibility_date,
    compatibilityFlags: config.compatibility_flags,
    bindings: { UPSTREAM_URL: upstreamUrl },
  };
}

/** port 0: any free port, picked by workerd. */
export async function startPassthrough(options: V4WorkerOptions, port = 0): Promise<Started> {
  const { startOnDirectSocket } = await import("../tools/cli/direct-socket");
  return startOnDirectSocket(options, { host: "127.0.0.1", port });
}

/**
 * Model `bench-model` → pool `p` → the upstream as its only replica. `stateful` is the
 * default config (affinity pins, leases, circuits: one Durable Object round trip before
 * the upstream call, one after in waitUntil); without it, `shared_state: false` routes
 * on weights alone.
 */
export function routerConfig(upstreamUrl: string, stateful: boolean): string {
  return `models:
  ${MODEL}: { pool: p }
pools:
  p:
    replicas:
      - { id: up, url: "${upstreamUrl}" }
routing:
  shared_state: ${stateful}
`;
}

/** Worker vars of a router variant: the simulated round trip, when there is one. */
export function routerVars(doRttMs: number | undefined): Record<string, string> {
  return doRttMs === undefined ? {} : { [SIMULATED_DO_RTT_VAR]: String(doRttMs) };
}

/**
 * Whether the router's code reads the simulated-RTT var at all: a row run with the var
 * set but never read would look like a free round trip, so the bench says so instead.
 */
export function routerReadsSimulatedRtt(build: RouterBuild): boolean {
  return build.script.contents.includes(SIMULATED_DO_RTT_VAR);
}
