/**
 * The Worker bundle stays small. workerd compiles the whole bundle when an isolate
 * starts, so its size is the budget. YAML is in it, for the admin endpoint and for
 * versions stored before the blob format, but only behind `import()`: nothing on the
 * way to the first routed request evaluates it.
 */
import os from "node:os";
import path from "node:path";
import * as esbuild from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { workerBuildOptions } from "../../tools/cli/bundle";
import { readWranglerWorker } from "../../tools/cli/runtime";

const BUDGET_BYTES = 439 * 1024; // minified; 627 KiB with classic zod's methods, 220 KiB since zod/mini, 200 KiB since js-yaml replaced yaml, 268 KiB with RouteWise (cost-aware routing: its LP, three objects, metering and calibration), 298 KiB before and 336 KiB with the client dialects (Anthropic Messages and OpenAI Responses, both ways: 36 KiB), 358 KiB with the dashboard (its page and script are strings, 16 KiB, which minifying cannot shrink), 383 KiB with limits per key, team and model (schema, leases, their object, enforcement, /admin/usage: 17 KiB) and issue 18's picking, 396 KiB with OpenTelemetry traces (hand-written OTLP JSON: 12 KiB), 401 KiB with limits' metrics, /routing view and budget warning, 408 KiB with the charts of RouteWise and graph models (their counters, the GraphCounters object) and trace ids in the engine's logs, 413 KiB with graphs charged their steps' usage, /admin/usage's query checks and limits' whole-read metering, 415.3 KiB with a graph's telemetry opt-out and the limit agent's per-request caches, 416.1 KiB with a cold isolate's overlapped object waits and the limit gate settling from a client's abort, 417.1 KiB with pin claims and probe admissions held open for a leaving client, error answers charged only their reported usage, /admin/usage's team filter and tidy sums, and the Responses fixes (text.format echoed, a failed stream's output kept), 418.4 KiB with objects that stop calling out for a pool or quota no config names, URLs stored without userinfo, one system message on Responses, the envelope's settings-less read and a quota's stored last error, 419.6 KiB with limits' allocation-light hot path (window ids without objects, a promise-free admission), a too-large request's own 429 message, calibration's check of a sample's age, invalid_tenant's param and the dashboard dropping a poll answered after a log-out, 423.2 KiB with the fixes of the 2026-11-29 outside audits (error answers scrubbed of secrets, a stream broken before its first chunk tried on, graph steps asked for usage and a broken read answered, duplicate keys and ${VAR} graph names and __proto__ refused, bounded token counts, stricter translated completions, the shared-state loop's bound on an exchange), 424.7 KiB with the second round (a fresh isolate's fallback to the last version that loads, chunked error answers scrubbed, a changed limit window carrying its spend, shares that follow the policy), 426.6 KiB with the dialect fixes found with the official SDKs (refusals, tool-call pieces, cut calls), the favicon route and log lines without made-up trace ids, 429.0 KiB with the 2026-11-29 afternoon audits (no redirect followed, browser-facing upstream headers dropped, URL userinfo sent as Basic auth, graph-name and Ensemble-number checks), 435.5 KiB with the rest of them (KServe's health and readiness probes and models.retrieve, upstream error words in every dialect, Retry-After passed on and on open circuits, graph errors in the surface's shape, Anthropic-native refusals of structured output, spend windows apart and per-key tenants, graphs reserved at their steps' prices and limited on their own path), 437.0 KiB with their re-checks (spend buckets by window, per-key tenant buckets in the views, the router's own rate-limit headers), 438.1 KiB with RouteWise's Retry-After on open route circuits, Responses' field names in refusals and limited chunked answers read whole
const LAZY_ONLY = ["node_modules/js-yaml/", "src/core/config/yaml.ts"]; // reached only through import()

let build: { bytes: number; inputs: esbuild.Metafile["inputs"]; contributing: string[]; entry: string };

beforeAll(async () => {
  const worker = await readWranglerWorker();
  const result = await esbuild.build({
    ...workerBuildOptions(worker.main, worker.define),
    outfile: path.join(os.tmpdir(), "switchyard-bundle-test.mjs"), // names the output; write stays false
    minify: true,
    metafile: true,
  });
  const [output] = Object.values(result.metafile.outputs);
  build = {
    bytes: result.outputFiles[0]!.contents.byteLength,
    inputs: result.metafile.inputs,
    // Inputs esbuild read but tree-shook away entirely (every other zod locale) are not in the Worker.
    contributing: Object.entries(output!.inputs).flatMap(([file, input]) => (input.bytesInOutput > 0 ? [file] : [])),
    entry: path.relative(process.cwd(), worker.main),
  };
}, 30_000);

describe("the Worker bundle", () => {
  it(`is at most ${BUDGET_BYTES / 1024} KiB minified`, () => {
    expect(build.bytes).toBeLessThanOrEqual(BUDGET_BYTES);
  });

  it("reaches YAML only through import(), so startup never evaluates it", () => {
    const statically = new Set<string>();
    const visit = (file: string) => {
      if (statically.has(file)) return;
      statically.add(file);
      for (const edge of build.inputs[file]?.imports ?? []) if (!edge.external && edge.kind !== "dynamic-import") visit(edge.path);
    };
    visit(build.entry);
    expect(statically.has("src/platform/config-source.ts")).toBe(true); // the walk really covers the Worker
    expect([...statically].filter((file) => LAZY_ONLY.some((prefix) => file.startsWith(prefix)))).toEqual([]);
    expect(build.contributing.some((file) => file.startsWith("node_modules/js-yaml/"))).toBe(true);
    expect(build.contributing.filter((file) => file.startsWith("node_modules/yaml/"))).toEqual([]); // the larger `yaml` package it replaced
  });

  it("carries none of classic zod and no zod locale but English", () => {
    const zod = build.contributing.filter((file) => file.startsWith("node_modules/zod/"));
    expect(zod.filter((file) => file.includes("/classic/"))).toEqual([]);
    expect(zod.filter((file) => file.includes("/locales/"))).toEqual(["node_modules/zod/v4/locales/en.js"]);
  });
});
