/**
 * `npm run bench:routewise`: spend and p99 latency of RouteWise against fixed-ratio
 * splits. For every row: fresh fake metered providers (seeded), a fresh router on
 * workerd with the row's config, calibration for RouteWise rows, then the same seeded
 * streamed requests from the same closed-loop clients, started at a quota window
 * boundary. Spend comes from the providers' own token counts; RouteWise rows are
 * cross-checked against the router's /metrics.
 *
 *   tsx bench/routewise/run.ts [--quick] [--requests N] [--rows a,b] [--out FILE] ...
 */
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Router, RouterBuild } from "../../tools/cli/runtime";
import { closedLoop, send, type Target } from "./client";
import { routerCounters, summariseRow, tallyOf, type RouterCounters, type RowResult } from "./measure";
import { readOptions, type Options } from "./options";
import { providerSpecs, startProviders, type ProviderSpec, type Providers } from "./providers";
import { comparisons, doc, knobLines, table, type Measured, type RunInfo } from "./report";
import { MODEL, configProblems, routerConfig, rowOf, type Row } from "./rows";
import { makeRequests } from "./workload";

const ADMIN_TOKEN = "bench-routewise-admin";
const REQUEST_TIMEOUT_MS = 30_000; // far above any latency the providers have; a stuck request is an error, not a hang
const READY_TIMEOUT_MS = 20_000;
const CALIBRATE_TIMEOUT_MS = 120_000;
const PROBE_MAX_TOKENS = 32;
const SETTLE_MS = 1_500; // isolates report to their objects at most every second: let the last batch land
const DISPOSE_TIMEOUT_MS = 10_000;

async function main(argv: string[]): Promise<number> {
  const o = readOptions(argv);
  if (typeof o === "number") return o;
  const started = performance.now();
  const loadAtStart = os.loadavg()[0]!.toFixed(2);
  giveUpAfter(60_000 + o.rows.length * (90_000 + o.requests * 400));
  const dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-routewise-"));
  // Router state goes here; removed on any exit: the end, the watchdog, or Miniflare's signal hook mid-row.
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  try {
    const specs = providerSpecs(o);
    const requests = makeRequests(o.seed, o.requests);
    const { buildRouter } = await import("../../tools/cli/runtime");
    const build = await buildRouter();
    const measured: Measured[] = [];
    for (const [i, name] of o.rows.entries()) {
      const row = rowOf(name, specs);
      const t0 = performance.now();
      const result = await runRow(build, o, row, specs, requests, path.join(dir, `${i}`));
      measured.push({ row, result });
      process.stderr.write(`  [${i + 1}/${o.rows.length}] ${row.label}: ${progressLine(result)} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
    }

    const seconds = (performance.now() - started) / 1000;
    const loadAtEnd = os.loadavg()[0]!.toFixed(2);
    process.stdout.write(
      [...knobLines(o, specs), "", ...table(measured, o.quotaWindowS), "", ...comparisons(measured), "", `run time ${seconds.toFixed(0)} s, nproc ${os.availableParallelism()}, load average ${loadAtStart} at the start, ${loadAtEnd} at the end`, ""].join("\n"),
    );
    if (o.out) {
      const info: RunInfo = { command: `npm run bench:routewise --${argv.length ? ` ${argv.join(" ")}` : ""}`, date: new Date().toISOString().slice(0, 10), nproc: os.availableParallelism(), node: process.version, loadAverage: loadAtStart, loadAverageEnd: loadAtEnd, seconds };
      await mkdir(path.dirname(path.resolve(o.out)), { recursive: true });
      await writeFile(o.out, doc(info, o, specs, measured));
      process.stderr.write(`bench:routewise: wrote ${o.out}\n`);
    }
    return 0;
  } catch (err) {
    process.stderr.write(`bench:routewise: ${(err as Error).stack ?? err}\n`);
    return 1;
  }
}

/** One row: fresh providers, fresh router, calibration if RouteWise, the load, then everything torn down. */
async function runRow(build: RouterBuild, o: Options, row: Row, specs: readonly ProviderSpec[], requests: ReturnType<typeof makeRequests>, persistTo: string): Promise<RowResult> {
  const providers = await startProviders(specs);
  let router: Router | undefined;
  try {
    const urls = new Map([...providers.byId].map(([id, p]) => [id, p.url]));
    const configText = routerConfig(row, specs, urls, o.probes);
    const problems = configProblems(configText);
    if (problems !== null) throw new Error(`the router refuses the config of row ${row.name}: ${problems}\n${configText}`);
    const { startRouter } = await import("../../tools/cli/runtime");
    router = await startRouter({ port: 0, build, configText, persistTo, vars: { ADMIN_TOKEN } });
    const target: Target = { url: router.url, model: MODEL, timeoutMs: REQUEST_TIMEOUT_MS };

    if (row.kind === "routewise") {
      await calibrate(router.url, o.probes);
      await untilQuotaPolled(router.url);
    }
    const check = await send(target, { messages: [{ role: "user", content: "ping" }], maxTokens: 1 });
    if (!check.ok) throw new Error(`row ${row.name}: the check request failed: ${check.error}`);
    await sleep(SETTLE_MS);
    await untilQuotaWindowStarts(providers);
    for (const p of providers.byId.values()) p.resetStats(); // calibration and the check are not the row's spend
    const before = row.kind === "routewise" ? await counters(router.url) : null;

    const run = await closedLoop(target, requests, o.concurrency);

    let after: RouterCounters | null = null;
    if (before !== null) after = await settledCounters(router.url);
    const fromRouter = before && after ? { spend: after.spend - before.spend, hedgesFired: after.hedgesFired - before.hedgesFired } : null;
    const tallies = [...providers.byId.values()].map((p) => tallyOf(p.stats()));
    return summariseRow(run, tallies, specs, fromRouter);
  } finally {
    await Promise.allSettled([router ? withDeadline(router.dispose(), DISPOSE_TIMEOUT_MS) : undefined, providers.close()]);
    await rm(persistTo, { recursive: true, force: true });
  }
}

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function calibrate(url: string, probes: number): Promise<void> {
  const res = await fetch(`${url}/admin/routewise/${MODEL}/calibrate`, {
    method: "POST",
    headers: { ...admin, "content-type": "application/json" },
    body: JSON.stringify({ probes, max_tokens: PROBE_MAX_TOKENS }),
    signal: AbortSignal.timeout(CALIBRATE_TIMEOUT_MS),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`calibration answered ${res.status}: ${text.slice(0, 500)}`);
  const body = JSON.parse(text) as { calibrated?: boolean; failures?: Record<string, string> };
  if (body.calibrated !== true) throw new Error(`calibration left the model uncalibrated: ${text.slice(0, 500)}`);
}

/** Until /routing shows every quota of the model polled: before that the router counts it as exhausted (fail safe). */
async function untilQuotaPolled(url: string): Promise<void> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  let last = "";
  while (performance.now() < deadline) {
    const res = await fetch(`${url}/routing`, { headers: admin });
    last = await res.text();
    if (res.ok) {
      const view = (JSON.parse(last) as { models?: Record<string, { routes?: { quota: { fail_safe: string | null; remaining: number | null } | null }[] }> }).models?.[MODEL];
      const quotas = (view?.routes ?? []).flatMap((r) => (r.quota ? [r.quota] : []));
      if (quotas.every((q) => q.fail_safe === null && q.remaining !== null)) return;
    }
    await sleep(200);
  }
  throw new Error(`the quota was never polled: /routing answered ${last.slice(0, 500)}`);
}

/** Waits for the quota provider's next window, so every row starts with its whole quota. */
async function untilQuotaWindowStarts(providers: Providers): Promise<void> {
  const quota = providers.byId.get("sub");
  if (!quota) return;
  const resetAtMs = quota.stats().quota.resetAt * 1000;
  await sleep(Math.max(0, resetAtMs - Date.now()) + 20);
}

async function counters(url: string): Promise<RouterCounters> {
  const res = await fetch(`${url}/metrics`, { headers: admin });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${text.slice(0, 300)}`);
  return routerCounters(text, MODEL);
}

/** The counters once the isolate's last batch has reached the objects: two equal reads in a row. */
async function settledCounters(url: string): Promise<RouterCounters> {
  let previous = await counters(url);
  for (let i = 0; i < 10; i++) {
    await sleep(SETTLE_MS / 2);
    const now = await counters(url);
    if (now.spend === previous.spend && now.hedgesFired === previous.hedgesFired) return now;
    previous = now;
  }
  return previous;
}

function progressLine(r: RowResult): string {
  const share = Object.entries(r.answeredBy)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  return `$${r.spendPer1k.toFixed(3)}/1k, p50 ${r.latencyP50.toFixed(0)} ms, p99 ${r.latencyP99.toFixed(0)} ms, ${r.rps.toFixed(1)} req/s, ${share}${r.quota429 ? `, ${r.quota429} quota 429s` : ""}${r.concurrency429 ? `, ${r.concurrency429} slot 429s` : ""}${r.hedges ? `, ${r.hedges} hedges` : ""}${r.errors ? `, ${r.errors} errors` : ""}`;
}

/** The bench always stops by itself: past `ms`, it says so and exits 1. */
function giveUpAfter(ms: number): void {
  const timer = setTimeout(() => {
    process.stderr.write(`bench:routewise: still running after ${Math.round(ms / 1000)} s, giving up\n`);
    process.exit(1);
  }, ms);
  timer.unref();
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T | void> {
  return Promise.race([p, sleep(ms, undefined, { ref: false })]);
}

process.exit(await main(process.argv.slice(2)));
