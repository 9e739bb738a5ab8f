/**
 * `npm run bench:headers` as a user runs it, for a fraction of a second per variant: every
 * variant starts, answers as it claims (the script checks each one's headers before it
 * measures, and exits non-zero otherwise) and takes load without errors. Numbers are not
 * asserted: the machine is shared.
 */
import { describe, expect, it } from "vitest";
import { runScript } from "../support/run-script";

const RUN_TIMEOUT_MS = 90_000; // five workerd starts and 5 × 0.6 s of load on a busy machine
const VARIANTS = ["plain", "ratelimit", "one-header", "read", "read+ratelimit"];

describe("npm run bench:headers", () => {
  it(
    "measures every variant against plain without errors",
    async () => {
      const { code, stdout, stderr } = await runScript("bench/header-cost.ts", ["--rounds", "1", "--duration", "0.3", "--concurrency", "2"], RUN_TIMEOUT_MS);
      expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);
      for (const variant of VARIANTS) {
        const row = new RegExp(`^${variant.replace("+", "\\+")} +(\\d+) +([\\d.]+)x +(\\d+) +([\\d.]+)x +(\\d+)$`, "m").exec(stdout);
        expect(row, `${variant}'s row in:\n${stdout}`).not.toBeNull();
        expect(Number(row![1]), `${variant} req/s`).toBeGreaterThan(0);
        expect(Number(row![5]), `${variant} errors`).toBe(0);
      }
      expect(stdout).toMatch(/^plain +\d+ +1\.000x +\d+ +1\.000x +0$/m);
    },
    RUN_TIMEOUT_MS + 10_000,
  );
});
