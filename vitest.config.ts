import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Two projects: everything that can run in workerd does (unit + integration), and the
// end-to-end suite runs in Node because it starts `switchyard serve` as a real process.
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              // Tests publish config and expect the very next request to see it.
              bindings: { CONFIG_REFRESH_MS: "0", ADMIN_TOKEN: "test-admin-token", TEST_CLIENT_KEY: "sk-from-secret" },
            },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/unit/**/*.test.ts", "test/integration/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
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
