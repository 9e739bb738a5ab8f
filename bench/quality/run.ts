/**
 * `npm run bench:quality`: replica-picking policies compared on routing quality. For
 * every workload and policy: a fresh fleet of fake vLLM replicas on 127.0.0.1 (empty
 * caches), a fresh router on workerd with that policy, the same seeded requests from the
 * same closed-loop clients; then hit rate, TTFT, throughput and in-flight balance per
 * row, and the oracle hit rate per workload. See bench/quality/options.ts for the knobs.
 *
 *   tsx bench/quality/run.ts [--quick] [--requests N] [--policies a,b] [--out FILE] ...
 */
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Router, RouterBuild } from "../../tools/cli/runtime";
import { startFleet, type Fleet } from "./fleet";
import { drive, sampleInFlight, slowest, summarise, type CellResult } from "./measure";
import { oracleHitRate } from "./oracle";
import { USAGE, concurrencyOf, parseOptions, workloadOf, type Options, type Scenario } from "./options";
import { doc, knobLines, sectionText, type Row, type Section } from "./report";
import { ConfigRejected, MODEL, checkRouter, expectedHitRate, policyRejection, routerConfig, startQualityRouter, withoutStandIns } from "./router";
import { makeWorkload, requestsOf } from "./workloads";

const REQUEST_TIMEOUT_MS = 30_000; // far above any TTFT the knobs allow; a stuck request is an error, not a hang
const CHECK_TIMEOUT_MS = 15_000;
const SAMPLE_EVERY_MS = 50;
const SCRAPES_BEFORE_LOAD = 3; // the first sample, one more, and time for an isolate's view (500 ms refresh) to carry them
const SCRAPE_WAIT_MS = 10_000;
const DISPOSE_TIMEOUT_MS = 10_000;

async function main(argv: string[]): Promise<number> {
  let o: Options | "help";
  try {
    o = parseOptions(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (o === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const opts = o;
  const started = performance.now();
  const startLoad = os.loadavg()[0]!.toFixed(2);

  const skipped = new Map<string, string>();
  for (const policy of opts.policies) {
    const why = policyRejection(policy, { scrapeMs: opts.scrapeMs });
    if (why !== null) skip(skipped, policy, why);
  }
  if (!opts.policiesNamed) opts.policies = withoutStandIns(opts.policies, (p) => !skipped.has(p));
  const cells = opts.scenarios.length * (opts.policies.length - skipped.size);
  const budgetMs = 60_000 + cells * (60_000 + opts.size.requests * 500);
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench:quality: still running after ${Math.round(budgetMs / 1000)} s, giving up\n`);
    process.exit(1);
  }, budgetMs);
  watchdog.unref();
  const stopped = new AbortController();

  const dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-quality-"));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.on("exit", removeDir); // also when a signal lands while a router starts and Miniflare's hook exits
  try {
    const { buildRouter } = await import("../../tools/cli/runtime");
    const build = await buildRouter();

    const sections: Section[] = [];
    let cell = 0;
    for (const scenario of opts.scenarios) {
      const workload = makeWorkload(workloadOf(scenario), opts.seed, opts.size);
      const about = scenario === "shared-stale" ? `as shared, with ${staleReplicas(opts)} /metrics ${opts.staleMetrics === "failing" ? "failing (503)" : "frozen at their idle numbers"} from the start of the load` : workload.about;
      const section: Section = { scenario, about, oracleHitRate: oracleHitRate(requestsOf(workload), opts.fleet.blockSize), rows: [] };
      for (const policy of opts.policies) {
        if (stopped.signal.aborted) break;
        if (skipped.has(policy)) continue; // listed once, above the tables
        cell++;
        const t0 = performance.now();
        const row = await runCell(build, opts, scenario, policy, workload.conversations, path.join(dir, `${cell}`), stopped);
        if ("rejected" in row) {
          skip(skipped, policy, row.rejected);
          continue;
        }
        section.rows.push({ policy, result: row.result, ...(row.note ? { note: row.note } : {}) });
        process.stderr.write(`  [${cell}/${cells}] ${scenario} × ${policy}: ${progressLine(row.result)} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
      }
      sections.push(section);
    }
    if (stopped.signal.aborted) {
      process.stderr.write("bench:quality: interrupted\n");
      return 130;
    }

    const seconds = (performance.now() - started) / 1000;
    const skippedList = [...skipped].map(([policy, reason]) => ({ policy, reason }));
    process.stdout.write(
      [
        ...knobLines(opts),
        ...skippedList.map((s) => `skipped: router does not know policy ${s.policy}`),
        "",
        ...sections.flatMap((s) => [...sectionText(s), ""]),
        `run time ${seconds.toFixed(0)} s, nproc ${os.availableParallelism()}, load average ${startLoad} at the start`,
        "",
      ].join("\n"),
    );
    if (opts.out) {
      const info = {
        command: `npm run bench:quality --${argv.length ? ` ${argv.join(" ")}` : ""}`,
        date: new Date().toISOString().slice(0, 10),
        nproc: os.availableParallelism(),
        node: process.version,
        loadAverage: startLoad,
        seconds,
        skipped: skippedList,
      };
      await mkdir(path.dirname(path.resolve(opts.out)), { recursive: true });
      await writeFile(opts.out, doc(info, opts, sections));
      process.stderr.write(`bench:quality: wrote ${opts.out}\n`);
    }
    return 0;
  } catch (err) {
    process.stderr.write(`bench:quality: ${(err as Error).stack ?? err}\n`);
    return 1;
  } finally {
    clearTimeout(watchdog);
    removeDir();
    process.off("exit", removeDir);
  }
}

function skip(skipped: Map<string, string>, policy: string, reason: string): void {
  skipped.set(policy, reason);
  process.stderr.write(`skipped: router does not know policy ${policy} (${reason})\n`);
}

type CellOutcome = { result: CellResult; note?: string } | { rejected: string };

/** One row: fresh fleet, fresh router, the workload, then everything torn down. */
async function runCell(build: RouterBuild, o: Options, scenario: Scenario, policy: string, conversations: Parameters<typeof drive>[0]["conversations"], persistTo: string, stopped: AbortController): Promise<CellOutcome> {
  const signal = stopped.signal;
  const fleet = await startFleet(o.fleet, MODEL);
  let router: Router | undefined;
  try {
    router = await startQualityRouter(build, routerConfig(policy, fleet.replicas, { scrapeMs: o.scrapeMs }), persistTo);
    takeOverSignals(stopped); // each router's Miniflare re-adds its exit-at-once hook once the previous one is gone
    try {
      await checkRouter(router.url, CHECK_TIMEOUT_MS);
    } catch (err) {
      if (err instanceof ConfigRejected) return { rejected: err.message };
      throw err;
    }
    const scraped = await untilScraped(fleet, SCRAPES_BEFORE_LOAD, SCRAPE_WAIT_MS);
    if (scenario === "shared-stale") fleet.setMetrics(staleCount(o), o.staleMetrics);

    const sampler = sampleInFlight(fleet.inFlight, SAMPLE_EVERY_MS);
    const driven = await drive({ url: router.url, model: MODEL, conversations, concurrency: concurrencyOf(scenario, o), timeoutMs: REQUEST_TIMEOUT_MS, signal });
    const result = { ...summarise(driven, sampler.stop()), expectedHitRate: await expectedHitRate(router.url, CHECK_TIMEOUT_MS) };
    for (const line of slowest(driven, o.tail)) console.error(`  ${scenario} ${policy}: ${line}`);
    return { result, ...(scraped ? {} : { note: "no /metrics scrape seen before the load" }) };
  } finally {
    await Promise.allSettled([router ? withTimeout(router.dispose(), DISPOSE_TIMEOUT_MS) : undefined, fleet.close()]);
    await rm(persistTo, { recursive: true, force: true });
  }
}

/** Half the fleet (at least one replica), from r0, goes stale in shared-stale. */
function staleCount(o: Options): number {
  return Math.max(1, Math.floor(o.fleet.replicas / 2));
}

function staleReplicas(o: Options): string {
  const n = staleCount(o);
  return n === 1 ? "r0's" : `r0–r${n - 1}'s`;
}

/** Waits until every replica's /metrics has been read `times` times; false if that never happens in time. */
async function untilScraped(fleet: Fleet, times: number, withinMs: number): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    if (fleet.metricsReads().every((n) => n >= times)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

function progressLine(r: CellResult): string {
  return `hit ${(r.hitRate * 100).toFixed(1)}%, TTFT p50 ${r.ttftP50.toFixed(0)} ms p99 ${r.ttftP99.toFixed(0)} ms (after the first wave ${r.ttftP99AfterFirstWave.toFixed(0)} ms), ${r.rps.toFixed(1)} req/s, max/mean ${r.balance.maxOverMean.toFixed(2)}${r.errors ? `, ${r.errors} errors` : ""}`;
}

/**
 * Miniflare's exit hook answers Ctrl-C with process.exit on the spot; once a router is
 * up, the first signal stops the load instead and the row's cleanup runs. A second one
 * exits at once. (As bench/run.ts; tsx's own hidden listener stays.)
 */
function takeOverSignals(stopped: AbortController): void {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    for (const listener of process.listeners(signal)) process.off(signal, listener);
    process.on(signal, () => {
      if (stopped.signal.aborted) process.exit(130);
      stopped.abort();
    });
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

process.exit(await main(process.argv.slice(2)));
