/**
 * `npm run bench` as a user runs it, for a fraction of a second per target: it must
 * start everything, push load through every target (the simulated-RTT row and Portkey
 * included), print the table, the concurrency-1 table, the aim ratios, the bundle size
 * and one cold-start sample per Worker.
 * Numbers are never asserted beyond "some requests got through and none failed": the
 * machine is shared, and performance is reported by the bench, not tested.
 */
import { describe, expect, it } from "vitest";
import { runScript } from "../support/run-script";

const BENCH_TIMEOUT_MS = 240_000; // ~12 workerd starts and, with --fresh-workers, 14 more, Portkey, 2 rounds × 9 targets × 0.7 s, 2 rounds × 6 × 0.5 s at concurrency 1, 5 cold starts (one per row), on a busy machine
const TARGETS = ["direct", "pass-through", "body-routing", "router", "router+state", "router+state keyed", "router+state limits", "router+state rtt50", "portkey"];
const C1_TARGETS = ["body-routing", "router", "router+state", "router+state keyed", "router+state limits", "router+state rtt50"];

const runBench = (args: string[]) => runScript("bench/run.ts", args, BENCH_TIMEOUT_MS);

describe("npm run bench", () => {
  it(
    "measures every target, prints the table, the bundle size and the cold starts without errors",
    async () => {
      const { code, stdout, stderr } = await runBench(["--duration", "0.5", "--warmup", "0.2", "--concurrency", "4", "--do-rtt-ms", "50", "--cold-samples", "1", "--c1-duration", "0.3", "--fresh-workers"]);
      expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);

      // --fresh-workers: every Worker row's second round ran on a new workerd; the upstream (direct) kept its process.
      const pids = (round: number, target: string) => new RegExp(`^ {2}round ${round} {2}${target.replace(/[+]/g, "\\+")} .* pid (\\d+)`, "m").exec(stdout)?.[1];
      for (const target of TARGETS.filter((t) => t !== "portkey")) {
        const [first, second] = [pids(1, target), pids(2, target)];
        expect(first, `${target} round 1 names its process`).toBeDefined();
        if (target === "direct") expect(second, target).toBe(first);
        else expect(second, target).not.toBe(first);
      }

      const lines = stdout.split("\n");
      const headerAt = lines.findIndex((l) => /^target\s+requests\s+req\/s\s+p50 ms\s+p99 ms\s+errors\b/.test(l));
      expect(headerAt, stdout).toBeGreaterThanOrEqual(0);
      const rows = new Map<string, string[]>();
      for (const line of lines.slice(headerAt + 2, headerAt + 2 + TARGETS.length)) {
        const cells = line.trim().split(/\s{2,}/);
        rows.set(cells[0]!, cells);
      }
      expect([...rows.keys()]).toEqual(TARGETS);
      for (const [target, [, requests, rps, p50, p99, errors, vsDirect, , , cpu]] of rows) {
        expect(cpu, target).toMatch(/^\d+$/); // the serving process's CPU per request, from /proc (Linux)
        expect(Number(requests), target).toBeGreaterThan(0);
        expect(Number(rps), target).toBeGreaterThan(0);
        expect(Number(p50), target).toBeGreaterThan(0);
        expect(Number(p99), target).toBeGreaterThanOrEqual(Number(p50));
        expect(errors, target).toBe("0");
        expect(vsDirect, target).toMatch(/^\d+\.\d\dx$/);
      }
      expect(stdout).toMatch(/^router vs pass-through: \d+\.\d\dx req\/s/m);
      expect(stdout).toMatch(/^router vs body-routing: \d+\.\d\dx req\/s/m);
      expect(stdout).toMatch(/^p50 ratios to pass-through: router \d+\.\d\dx, router\+state \d+\.\d\dx/m);
      expect(stdout).toMatch(/^stateful vs stateless router: \d+\.\d\dx req\/s/m);
      expect(stdout).toMatch(/^stateful \(rtt 50 ms\) vs stateless router: added p50 [+-]\d+\.\d\d ms/m);
      expect(stdout).toMatch(/^router vs portkey: \d+\.\d\dx req\/s/m);
      expect(stdout).toMatch(/^limits vs keyed: \d+\.\d\dx req\/s/m);

      const c1At = lines.findIndex((l) => /^concurrency 1\s+requests\s+req\/s\s+p50 ms\s+p99 ms\s+errors\s+added p50 ms\s+added p99 ms\s+CPU µs\/req$/.test(l));
      expect(c1At, stdout).toBeGreaterThanOrEqual(0);
      const c1Rows = new Map<string, string[]>();
      for (const line of lines.slice(c1At + 2, c1At + 2 + C1_TARGETS.length)) {
        const cells = line.trim().split(/\s{2,}/);
        c1Rows.set(cells[0]!, cells);
      }
      expect([...c1Rows.keys()]).toEqual(C1_TARGETS);
      for (const [target, [, requests, rps, p50, p99, errors]] of c1Rows) {
        expect(Number(requests), target).toBeGreaterThan(0);
        expect(Number(rps), target).toBeGreaterThan(0);
        expect(Number(p50), target).toBeGreaterThan(0);
        expect(Number(p99), target).toBeGreaterThanOrEqual(Number(p50));
        expect(errors, target).toBe("0");
      }
      expect(stdout).toMatch(/^ {2}stateless router \/ body-routing req\/s \(concurrency 4\): \d+\.\d\dx \(rounds \d+\.\d\dx-\d+\.\d\dx\) \(aim >= 0\.90x\)/m);
      expect(stdout).toMatch(/^ {2}stateful router \/ body-routing req\/s \(concurrency 4\): \d+\.\d\dx \(rounds \d+\.\d\dx-\d+\.\d\dx\) \(aim >= 0\.85x\); keyed \d+\.\d\dx/m);
      expect(stdout).toMatch(/^ {2}workerd CPU per request \/ body-routing's \(concurrency 4; [^)]*\): stateless \d+\.\d\dx, stateful \d+\.\d\dx, keyed \d+\.\d\dx/m);
      expect(stdout).toMatch(/^ {2}added p50 at concurrency 1: stateful [+-]\d+\.\d\d ms \(aim <= \+0\.30 ms\)/m);
      expect(stdout).toMatch(/^ {2}stateful p99 \/ stateless p99 at concurrency 1: \d+\.\d\dx \(aim <= 1\.20x\)/m);
      expect(stdout).toMatch(/^ {2}limits \/ keyed req\/s \(concurrency 4\): \d+\.\d\dx \(rounds \d+\.\d\dx-\d+\.\d\dx\) \(aim >= 0\.90x\); workerd CPU per request \d+\.\d\dx$/m);
      expect(stdout).toMatch(/^ {2}limits over keyed at concurrency 1: p50 [+-]\d+\.\d\d ms, p99 [+-]\d+\.\d\d ms$/m);
      expect(stdout).toMatch(/^ {2}minified +\d+ B .* \d+ B /m);
      for (const worker of ["pass-through", "body-routing", "router", "router+state", "router+state limits rtt50"]) {
        expect(stdout).toMatch(new RegExp(`^${worker.replace("+", "\\+")} +\\d+ \\(\\d+-\\d+\\) +\\d+ \\(`, "m"));
      }
      expect(stdout.split("\n").filter((l) => l.includes("WARNING"))).toEqual([]);
    },
    BENCH_TIMEOUT_MS + 10_000,
  );
});
