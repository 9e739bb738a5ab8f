/**
 * `npm run bench:quality` as a user runs it, as small as it goes: one known policy and
 * one the router has never heard of, one workload, a handful of requests. It must start
 * the fleet and the router, skip the unknown policy with its message, and print a table
 * whose row got every request through. Numbers are not asserted: the machine is shared.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { runScript } from "../support/run-script";

const RUN_TIMEOUT_MS = 90_000; // one workerd start, a fleet and 12 requests, on a busy machine

const run = (args: string[]) => runScript("bench/quality/run.ts", args, RUN_TIMEOUT_MS);

it(
  "runs a known policy, skips an unknown one with a message, prints the table and writes the doc",
  async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "bench-quality-test-"));
    try {
      const out = path.join(dir, "quality.md");
      const { code, stdout, stderr } = await run(["--policies", "least_loaded,no_such_policy", "--workloads", "shared", "--requests", "12", "--concurrency", "3", "--replicas", "2", "--out", out]);
      expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);
      expect(stdout).toContain("skipped: router does not know policy no_such_policy");
      const row = stdout.split("\n").find((l) => l.startsWith("| least_loaded |"));
      expect(row, stdout).toBeDefined();
      const cellsOf = (line: string) => line.split("|").map((c) => c.trim());
      const header = cellsOf(stdout.split("\n").find((l) => l.startsWith("| policy |"))!);
      const cells = cellsOf(row!);
      const cell = (name: string) => cells[header.indexOf(name)]; // by the header's name: columns come and go
      expect(cell("errors")).toBe("0");
      expect(cell("requests per replica")!.split("/").map(Number).reduce((a, b) => a + b, 0)).toBe(12); // every request served
      expect(cell("router expected")).toBe("-"); // least_loaded reads no prompts: no prefix index
      expect(stdout).toMatch(/\| oracle \(one unbounded cache\) \| \d+\.\d%/);
      const doc = await readFile(out, "utf8");
      expect(doc).toContain("npm run bench:quality -- --policies least_loaded,no_such_policy");
      expect(doc).toContain(row!);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  RUN_TIMEOUT_MS + 10_000,
);
