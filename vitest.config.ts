import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { buildSync } from "esbuild";
import { workerBuildOptions } from "./tools/cli/bundle.ts";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { defineConfig } from "vitest/config";

// The second router runs with wrangler.toml's date and flags, read from the file so the two cannot drift.
const WRANGLER_TOML = readFileSync("wrangler.toml", "utf8");
const COMPATIBILITY_DATE = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(WRANGLER_TOML)![1]!;
const COMPATIBILITY_FLAGS = JSON.parse(/^compatibility_flags\s*=\s*(\[[^\]]*\])/m.exec(WRANGLER_TOML)![1]!) as string[];
const TEST_VARS = { CONFIG_REFRESH_MS: "0", ADMIN_TOKEN: "test-admin-token", TEST_CLIENT_KEY: "sk-from-secret" };
// The plugin names the Worker that runs the tests (and hosts the Durable Objects) after the project.
const RUNNER_WORKER = "vitest-plugin-runner-workers";

/**
 * A second router isolate for the multi-isolate tests: the same Worker, bundled as
 * wrangler would, run as its own Worker (its own module scope, so its own view, pin
 * cache and reports) and bound to the test Worker's Durable Objects and KV namespace,
 * as two isolates of one deployment are. Tests reach it through the ROUTER_B binding.
 */
function secondRouter() {
  const outfile = path.resolve(".switchyard/test-build/router-b.mjs");
  mkdirSync(path.dirname(outfile), { recursive: true });
  buildSync({ ...workerBuildOptions("src/index.ts"), write: true, outfile, logLevel: "error" });
  const objects = { POOL_STATE: "PoolState", AFFINITY: "AffinityShard", BANDIT: "BanditState", ROUTE_ENVELOPE: "RouteEnvelope", PROVIDER_QUOTA: "ProviderQuota", CONCURRENCY_SLOTS: "ConcurrencySlots", PRINCIPAL_LIMITS: "PrincipalLimits", GRAPH_COUNTERS: "GraphCounters" };
  return {
    name: "router-b",
    modules: true,
    scriptPath: outfile,
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: COMPATIBILITY_FLAGS,
    kvNamespaces: { CONFIG: "CONFIG" },
    durableObjects: Object.fromEntries(Object.entries(objects).map(([binding, className]) => [binding, { className, scriptName: RUNNER_WORKER, useSQLite: true }])),
    bindings: TEST_VARS,
  };
}

// Three projects: everything that can run in workerd does (unit + integration), the
// benches' pure parts run in Node as the benches do, and the end-to-end suite runs in
// Node because it starts `switchyard serve` as a real process.
export default defineConfig({
  test: {
    // The tests mostly wait on timers, sockets and workerd, not on the CPU. Vitest's default
    // (available cores − 1) ran one file at a time on the 2-core machines we build on: 224 s.
    // Two at a time: 123 s. Four: 85 s, but a 200 ms try timeout in proxy.test.ts then
    // missed once under the load, so two.
    maxWorkers: 2,
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              // Tests publish config and expect the very next request to see it.
              bindings: TEST_VARS,
              serviceBindings: { ROUTER_B: "router-b" },
              workers: [secondRouter()],
            },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/unit/**/*.test.ts", "test/integration/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          // Vitest's 5 s default is a speed assumption: on a loaded 2-core machine the first
          // test of a file (cold isolate) or 1,000 HTTP requests take about that long. Waits
          // inside tests are bounded on their own (test/support/timing.ts, expect.poll).
          testTimeout: 20_000,
          hookTimeout: 20_000,
        },
      },
      {
        // Pure parts of the benchmarks (bench/), in Node as the benches run.
        test: {
          name: "bench",
          environment: "node",
          include: ["test/bench/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          environment: "node",
          include: ["test/e2e/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 90_000,
        },
      },
    ],
  },
});
