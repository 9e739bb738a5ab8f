/**
 * `npm run bench`: throughput and added latency of the Switchyard router, measured side
 * by side with a direct call to the upstream, a bare pass-through Worker and Portkey's
 * gateway, in one run, against one fake upstream, with one load generator; then the
 * router's bundle size and a fresh isolate's time to first response. See bench/README.md.
 *
 *   tsx bench/run.ts [--duration S] [--warmup S] [--concurrency N] [--rounds N] [--stream]
 *                    [--do-rtt-ms N] [--no-portkey] [--cold-samples N] [--c1-duration S]
 *
 * Processes: this one (orchestration and the load generator), the fake OpenAI upstream
 * in a child Node process (bench/upstream-child.ts), one workerd per Worker target
 * started through Miniflare and served on its direct socket (bench/workers.ts), and the
 * Portkey gateway in a child Node process (bench/portkey.ts). Only 127.0.0.1 is used.
 */
import { rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { bundleReport, measureBundle } from "./bundle-size";
import { processCpuMs, withWorkerdPid } from "./cpu";
import { coldStartReport, sampleColdStarts, type ColdTarget } from "./cold-start";
import { runLoad } from "./load";
import { USAGE, parseOptions, type Options } from "./options";
import { PORTKEY_MARKER_HEADER, findPortkey, portkeyHeaders, startPortkey } from "./portkey";
import { comparison, errorWarnings, fmt, fmtRps, fmtUs, pool, ratio, roundSpread, signed, table, type Pooled, type Run } from "./report";
import { startUpstreamProcess } from "./upstream";
import { CLIENT_KEY, MODEL, SIMULATED_DO_RTT_VAR, buildBodyRouting, buildPassthrough, keyedConfig, routerReadsSimulatedRtt, routerVars, seed004Config, startPassthrough, type Started } from "./workers";

const CHAT_PATH = "/v1/chat/completions";
const REQUEST_TIMEOUT_MS = 10_000; // per request; the fake upstream answers in well under 1 ms
const STARTUP_BUDGET_MS = 120_000; // wrangler import, esbuild, six workerd starts and Portkey, on a busy machine
const COLD_SAMPLE_BUDGET_MS = 40_000; // one fresh workerd plus its first request, worst case
const DISPOSE_TIMEOUT_MS = 10_000;
const RTT_TARGET_MS = 2; // the team's goal: at most this much added p50 with a 50 ms Durable Object round trip
// Issue 16's aims, against the body-routing row: throughput at the bench's concurrency,
// added latency and the stateful tail one request at a time.
const AIM_STATELESS_RPS = 0.9;
const AIM_STATEFUL_RPS = 0.85;
const AIM_C1_ADDED_P50_MS = 0.3;
const AIM_C1_TAIL_RATIO = 1.2;
// Issue 19's aim: a key with every kind of limit keeps this much of the same key's req/s without limits.
const AIM_LIMITS_RPS = 0.9;
// Cloudflare's edge sets CF-Connecting-IP on every request; on a direct socket nothing
// does, so the load generator sends it, and stateful rows key clients as in production.
const CLIENT_ADDRESS = "127.0.0.1";
const UPSTREAM_MARKER_HEADER = "x-fake-server";
const ROUTER_MARKER_HEADER = "x-switchyard-replica";
// On every answer to a limited key (docs/limits.md): the limits row's requests were counted, not just routed.
const LIMITS_MARKER_HEADER = "x-ratelimit-remaining-requests";

interface Target {
  name: string;
  url: string;
  /** Sent on every request, on top of the common ones. */
  headers: Record<string, string>;
  /** Present on every response that really went through this target. */
  expectHeader: string;
  /** One line for the header block: what runs and where. */
  about: string;
  /** The process serving it, whose CPU time the table reports per request. */
  pid: number | undefined;
  /** A Worker row: replaces its workerd with a new one (--fresh-workers) and names it. */
  restart?: () => Promise<{ url: string; pid: number | undefined }>;
}

async function main(argv: string[]): Promise<number> {
  let opts: Options | "help";
  try {
    opts = parseOptions(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (opts === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const o = opts;
  const portkeyFound = o.portkey && !o.stream ? findPortkey() : null;
  const targetCount = 7 + (o.doRttMs === undefined ? 0 : 1) + (portkeyFound ? 1 : 0);

  // Bounded no matter what: a hung target or a stuck start cannot keep the bench alive.
  const perRunMs = o.durationMs + o.warmupMs + 2 * REQUEST_TIMEOUT_MS;
  const perC1RunMs = o.c1DurationMs + o.warmupMs + 2 * REQUEST_TIMEOUT_MS;
  const restartMs = o.freshWorkers ? 2 * COLD_SAMPLE_BUDGET_MS : 0; // a new workerd per Worker row and round, in both tables
  const budgetMs = STARTUP_BUDGET_MS + o.rounds * targetCount * (perRunMs + perC1RunMs + restartMs) + o.coldSamples * 3 * COLD_SAMPLE_BUDGET_MS;
  let persistTo: string | undefined;
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: still running after ${Math.round(budgetMs / 1000)} s, giving up\n`);
    // Miniflare's exit hook stops workerd and the upstream child sees its stdin close.
    if (persistTo) rmSync(persistTo, { recursive: true, force: true });
    process.exit(1);
  }, budgetMs);
  watchdog.unref();

  const cleanups: Array<() => Promise<void>> = [];
  const keep = <T extends { dispose(): Promise<void> }>(s: T): T => (cleanups.push(() => s.dispose()), s);
  // A Worker that --fresh-workers may replace: whichever workerd serves it last is disposed at the end.
  const worker = async (start: () => Promise<Started>) => {
    let current = await withWorkerdPid(start);
    cleanups.push(() => current.dispose());
    const restart = async () => {
      await current.dispose();
      current = await withWorkerdPid(start);
      return { url: current.url, pid: current.pid };
    };
    return { url: current.url, pid: current.pid, restart };
  };
  const stopped = new AbortController();
  try {
    const dir = (persistTo = await mkdtemp(path.join(os.tmpdir(), "switchyard-bench-")));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));

    const upstream = await startUpstreamProcess();
    cleanups.push(upstream.stop);
    const { buildRouter, startRouter, publishLocalConfig } = await import("../tools/cli/runtime");
    const [build, passOptions, bodyRoutingOptions, seedStateless, seedStateful] = await Promise.all([
      buildRouter(),
      buildPassthrough(upstream.url),
      buildBodyRouting(upstream.url),
      seed004Config(false),
      seed004Config(true),
    ]);
    const vars = routerVars(upstream.url);
    const router = (name: string, configText: string, rtt?: number) => worker(() => startRouter({ port: 0, build, configText, persistTo: path.join(dir, name), vars: routerVars(upstream.url, rtt) }));
    const [portkey] = await Promise.all([
      portkeyFound ? startPortkey(portkeyFound.script).then(keep) : undefined,
      publishLocalConfig(build, path.join(dir, "cold-stateless"), seedStateless),
      publishLocalConfig(build, path.join(dir, "cold-stateful"), seedStateful),
      publishLocalConfig(build, path.join(dir, "cold-limits"), keyedConfig(upstream.url, true)),
    ]);
    // One by one: each Worker's workerd is found as the child that appeared with it, for its CPU column.
    const pass = await worker(() => startPassthrough(passOptions));
    const bodyRouting = await worker(() => startPassthrough(bodyRoutingOptions));
    const stateless = await router("stateless", seedStateless);
    const stateful = await router("stateful", seedStateful);
    const keyed = await router("keyed", keyedConfig(upstream.url));
    const limited = await router("limits", keyedConfig(upstream.url, true));
    const rtt = o.doRttMs === undefined ? undefined : await router("stateful-rtt", seedStateful, o.doRttMs);
    takeOverSignals(stopped);

    const rttName = `router+state rtt${o.doRttMs}`;
    const targets: Target[] = [
      { name: "direct", url: upstream.url, headers: {}, expectHeader: UPSTREAM_MARKER_HEADER, about: `fake OpenAI (tools/fakes/fake-openai.ts) in a child Node process, pid ${upstream.pid}`, pid: upstream.pid },
      { name: "pass-through", ...pass, headers: {}, expectHeader: UPSTREAM_MARKER_HEADER, about: "bench/passthrough-worker.ts on workerd" },
      { name: "body-routing", ...bodyRouting, headers: {}, expectHeader: UPSTREAM_MARKER_HEADER, about: "bench/body-routing-worker.ts: reads, parses, checks the model, picks 60/40, forwards: the floor" },
      { name: "router", ...stateless, headers: {}, expectHeader: ROUTER_MARKER_HEADER, about: "src/index.ts on workerd (tools/cli/runtime.ts), seed 004's routing.yaml (two replicas 60/40), shared_state: false" },
      { name: "router+state", ...stateful, headers: {}, expectHeader: ROUTER_MARKER_HEADER, about: "seed 004's routing.yaml as it is: affinity pins, leases and circuits in Durable Objects" },
      { name: "router+state keyed", ...keyed, headers: { authorization: `Bearer ${CLIENT_KEY}` }, expectHeader: ROUTER_MARKER_HEADER, about: "models:/pools: config, two replicas 60/40, affinity on, client keys on (Bearer key per request)" },
      { name: "router+state limits", ...limited, headers: { authorization: `Bearer ${CLIENT_KEY}` }, expectHeader: LIMITS_MARKER_HEADER, about: "router+state keyed plus prices and a limit of every kind on its key (rpm, tpm, concurrent, spend; none ever refuses)" },
    ];
    if (rtt) {
      targets.push({ name: rttName, ...rtt, headers: {}, expectHeader: ROUTER_MARKER_HEADER, about: `router+state, each Durable Object call after a simulated ${o.doRttMs} ms round trip` });
    }
    if (portkey) {
      targets.push({ name: "portkey", url: portkey.url, headers: portkeyHeaders(upstream.url), expectHeader: PORTKEY_MARKER_HEADER, about: `@portkey-ai/gateway ${portkeyFound!.version} (Node) in a child process, pid ${portkey.pid}, x-portkey-custom-host → the upstream`, pid: portkey.pid });
    }
    const body = requestBody(o.stream);
    for (const t of targets) await checkTarget(t, body);

    const notes: string[] = [];
    if (rtt && !routerReadsSimulatedRtt(build)) {
      notes.push(`WARNING: the router bundle never reads ${SIMULATED_DO_RTT_VAR}, so "${rttName}" runs with no simulated round trip`);
    }
    if (!portkey) notes.push(`portkey: left out (${portkeyAbsence(o, portkeyFound !== null)})`);
    const bundle = await measureBundle(build); // before the load: esbuild's CPU must not overlap a measurement

    const cpus = os.cpus().length;
    const w = Math.max(...targets.map((t) => t.name.length));
    process.stdout.write(
      [
        `Switchyard bench: ${o.stream ? "streamed (SSE)" : "plain JSON"} POST ${CHAT_PATH}, ${o.concurrency} concurrent, ` +
          `${fmtS(o.durationMs)} s per target after ${fmtS(o.warmupMs)} s warmup, ${o.rounds} round${o.rounds > 1 ? "s" : ""}`,
        ...targets.map((t) => `  ${t.name.padEnd(w)}  ${t.about}, ${t.url}`),
        `  ${"Workers".padEnd(w)}  each on its own workerd via Miniflare, served on its direct socket (no entry Worker)${o.freshWorkers ? "; a new workerd for each round after the first (--fresh-workers)" : ""}`,
        `  ${"load".padEnd(w)}  closed loop, node:http keep-alive, in this Node process (pid ${process.pid}), CF-Connecting-IP: ${CLIENT_ADDRESS}`,
        `  ${"machine".padEnd(w)}  ${cpus} CPU${cpus > 1 ? "s" : ""}, load average ${os.loadavg()[0]!.toFixed(2)}; every process above shares them`,
        ...notes.map((n) => `  ${n}`),
        "",
      ].join("\n"),
    );

    const runs = await runRounds(targets, body, o, o.concurrency, o.durationMs, stopped.signal);
    if (stopped.signal.aborted) {
      process.stderr.write("bench: interrupted\n");
      return 130;
    }
    const rows = targets.map((t) => pool(runs, t.name));
    process.stdout.write(`\n${loadReport(rows, o, rttName, notes).join("\n")}\n`);

    // One request at a time: the cost of one hop when nothing queues. The Workers only
    // (direct and Portkey say nothing about the router's own cost here).
    let c1: Pooled[] | undefined;
    if (o.concurrency === 1) c1 = rows;
    else if (o.c1DurationMs > 0) {
      const workers = targets.filter((t) => t.name === "body-routing" || t.name.startsWith("router"));
      process.stdout.write(`\nConcurrency 1, ${fmtS(o.c1DurationMs)} s per Worker after ${fmtS(o.warmupMs)} s warmup, ${o.rounds} round${o.rounds > 1 ? "s" : ""}\n`);
      const c1Runs = await runRounds(workers, body, o, 1, o.c1DurationMs, stopped.signal);
      if (stopped.signal.aborted) {
        process.stderr.write("bench: interrupted\n");
        return 130;
      }
      c1 = workers.map((t) => pool(c1Runs, t.name));
      process.stdout.write(`\n${c1Report(c1).join("\n")}\n`);
    }
    process.stdout.write(`\n${aimLines(rows, c1, rttName, o, runs).join("\n")}\n`);

    const coldLines: string[] = [];
    if (o.coldSamples > 0) {
      const request = { path: CHAT_PATH, body, headers: commonHeaders(), expectHeader: UPSTREAM_MARKER_HEADER };
      const coldRouter = (name: string) => () => startRouter({ port: 0, build, persistTo: path.join(dir, name), vars, startupCron: false });
      const cold: ColdTarget[] = [
        { name: "pass-through", start: () => startPassthrough(passOptions), request },
        // Reads and parses the body as the router must: what of a cold first response is the body's first read in JavaScript.
        { name: "body-routing", start: () => startPassthrough(bodyRoutingOptions), request },
        { name: "router", start: coldRouter("cold-stateless"), request: { ...request, expectHeader: ROUTER_MARKER_HEADER } },
        { name: "router+state", start: coldRouter("cold-stateful"), request: { ...request, expectHeader: ROUTER_MARKER_HEADER } },
      ];
      if (o.doRttMs !== undefined) {
        // A limited key's first request with the objects as far away as --do-rtt-ms says: the
        // waits a fresh isolate cannot avoid (its grant, the pool's view, its pin's claim), which local objects hide.
        const vars = routerVars(upstream.url, o.doRttMs);
        cold.push({
          name: `router+state limits rtt${o.doRttMs}`,
          start: () => startRouter({ port: 0, build, persistTo: path.join(dir, "cold-limits"), vars, startupCron: false }),
          request: { ...request, headers: { ...request.headers, authorization: `Bearer ${CLIENT_KEY}` }, expectHeader: LIMITS_MARKER_HEADER },
        });
      }
      const samples = await sampleColdStarts(cold, o.coldSamples, stopped.signal);
      if (stopped.signal.aborted) {
        process.stderr.write("bench: interrupted\n");
        return 130;
      }
      coldLines.push("", ...coldStartReport(samples));
    }
    process.stdout.write(`${["", ...bundleReport(bundle), ...coldLines].join("\n")}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).stack ?? err}\n`);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await withTimeout(cleanup(), DISPOSE_TIMEOUT_MS).catch((err: Error) => process.stderr.write(`bench: cleanup: ${err.message}\n`));
    }
    clearTimeout(watchdog);
  }
}

function commonHeaders(): Record<string, string> {
  return { "content-type": "application/json", "cf-connecting-ip": CLIENT_ADDRESS };
}

function requestBody(stream: boolean): string {
  return JSON.stringify({
    model: MODEL,
    messages: [{ role: "user", content: "Say hello in one word." }],
    ...(stream ? { stream: true } : {}),
  });
}

function portkeyAbsence(o: Options, installed: boolean): string {
  if (!o.portkey) return "--no-portkey";
  if (o.stream) return "--stream: Portkey 1.15.2's Node server answers streamed chat completions with 500, TypeError: immutable";
  if (!installed) return "@portkey-ai/gateway is not installed (a devDependency)";
  return "unknown";
}

/** One request per target before any load: a misrouted or failing target stops the bench. */
async function checkTarget(t: Target, body: string): Promise<void> {
  const res = await fetch(t.url + CHAT_PATH, {
    method: "POST",
    headers: { ...commonHeaders(), ...t.headers },
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  if (!res.ok || !res.headers.has(t.expectHeader)) {
    throw new Error(`${t.name} (${t.url}) answered ${res.status} ${res.headers.has(t.expectHeader) ? "" : `without ${t.expectHeader} `}: ${text.slice(0, 300)}`);
  }
}

/** Odd rounds in target order, even rounds reversed, so drift of the machine hits every target alike. */
async function runRounds(targets: Target[], body: string, o: Options, concurrency: number, durationMs: number, signal: AbortSignal): Promise<Run[]> {
  const runs: Run[] = [];
  const width = Math.max(...targets.map((t) => t.name.length));
  for (let round = 1; round <= o.rounds && !signal.aborted; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const t of order) {
      if (signal.aborted) break;
      if (o.freshWorkers && round > 1 && t.restart) Object.assign(t, await t.restart());
      const load = {
        url: t.url + CHAT_PATH,
        method: "POST",
        headers: { ...commonHeaders(), ...t.headers },
        body,
        concurrency,
        expectHeader: t.expectHeader,
        requestTimeoutMs: REQUEST_TIMEOUT_MS,
        signal,
      };
      if (o.warmupMs > 0) await runLoad({ ...load, durationMs: o.warmupMs });
      const cpuBefore = t.pid === undefined ? Number.NaN : processCpuMs(t.pid);
      const result = await runLoad({ ...load, durationMs });
      const cpuMs = t.pid === undefined ? Number.NaN : processCpuMs(t.pid) - cpuBefore;
      if (signal.aborted) break;
      runs.push({ round, target: t.name, result, cpuMs });
      process.stdout.write(
        `  round ${round}  ${t.name.padEnd(width)}  ${fmtRps(result.rps).padStart(8)} req/s  p50 ${fmt(result.p50)} ms  p99 ${fmt(result.p99)} ms  CPU ${fmtUs((cpuMs * 1000) / result.count)} µs/req` +
          `${t.pid === undefined ? "" : `  pid ${t.pid}`}${result.errors ? `  errors ${result.errors}` : ""}\n`,
      );
    }
  }
  return runs;
}

function loadReport(rows: Pooled[], o: Options, rttName: string, notes: string[]): string[] {
  const row = (name: string) => rows.find((r) => r.target === name);
  const [pass, bodyRouting, router, stateful, keyed, limited] = [row("pass-through")!, row("body-routing")!, row("router")!, row("router+state")!, row("router+state keyed")!, row("router+state limits")!];
  const out = [
    ...table(rows),
    "",
    comparison("router vs pass-through", router, pass),
    comparison("router+state vs pass-through", stateful, pass),
    `p50 ratios to pass-through: router ${ratio(router.p50, pass.p50)}, router+state ${ratio(stateful.p50, pass.p50)}`,
    comparison("body-routing vs pass-through", bodyRouting, pass),
    comparison("router vs body-routing", router, bodyRouting),
    comparison("router+state vs body-routing", stateful, bodyRouting),
    comparison("router+state keyed vs body-routing", keyed, bodyRouting),
    comparison("stateful vs stateless router", stateful, router),
    comparison("limits vs keyed", limited, keyed),
  ];
  const rtt = row(rttName);
  if (rtt) {
    out.push(
      `stateful (rtt ${o.doRttMs} ms) vs stateless router: added p50 ${signed(rtt.p50 - router.p50)} ms, added p99 ${signed(rtt.p99 - router.p99)} ms, ` +
        `${ratio(rtt.rps, router.rps)} req/s (target: at most +${RTT_TARGET_MS} ms p50 at 50 ms)`,
    );
  }
  const portkey = row("portkey");
  if (portkey) out.push(comparison("router vs portkey", router, portkey));
  if (o.rounds > 1) {
    out.push(
      `${o.rounds} rounds, odd ones in the order ${rows.map((r) => r.target).join(" → ")}, even ones reversed; each row pools` +
        " its rounds (requests and seconds summed, percentiles over all requests).",
    );
  }
  out.push('"added" = this row minus the direct row: what the hop (and, for the router, its routing) costs under this load.');
  out.push(...notes.filter((n) => n.startsWith("WARNING")), ...errorWarnings(rows));
  return out;
}

/** The concurrency-1 table: each Worker's latency and what it adds over body-routing. */
function c1Report(rows: Pooled[]): string[] {
  const base = rows.find((r) => r.target === "body-routing")!;
  return [...table(rows, { base, title: "concurrency 1" }), '"added" = this row minus the body-routing row, one request at a time.', ...errorWarnings(rows)];
}

/** The ratios issue 16's and issue 19's aims are stated in, each with its aim. */
function aimLines(rows: Pooled[], c1: Pooled[] | undefined, rttName: string, o: Options, runs: Run[]): string[] {
  const row = (list: Pooled[], name: string) => list.find((r) => r.target === name);
  const at = `concurrency ${o.concurrency}`;
  const [body, router, stateful, keyed, limited] = ["body-routing", "router", "router+state", "router+state keyed", "router+state limits"].map((n) => row(rows, n)!);
  const out = [
    "Aims (issue 16), against the body-routing Worker:",
    `  stateless router / body-routing req/s (${at}): ${ratio(router!.rps, body!.rps)}${roundSpread(runs, "router", "body-routing")} (aim >= ${AIM_STATELESS_RPS.toFixed(2)}x)`,
    `  stateful router / body-routing req/s (${at}): ${ratio(stateful!.rps, body!.rps)}${roundSpread(runs, "router+state", "body-routing")} (aim >= ${AIM_STATEFUL_RPS.toFixed(2)}x); keyed ${ratio(keyed!.rps, body!.rps)}`,
    `  workerd CPU per request / body-routing's (${at}; steadier than req/s on a shared machine): stateless ${ratio(router!.cpuUsPerRequest, body!.cpuUsPerRequest)}, stateful ${ratio(stateful!.cpuUsPerRequest, body!.cpuUsPerRequest)}, keyed ${ratio(keyed!.cpuUsPerRequest, body!.cpuUsPerRequest)}`,
  ];
  const limitsLines = [
    "Aim (issue 19), the limited key against the same key without limits:",
    `  limits / keyed req/s (${at}): ${ratio(limited!.rps, keyed!.rps)}${roundSpread(runs, "router+state limits", "router+state keyed")} (aim >= ${AIM_LIMITS_RPS.toFixed(2)}x); workerd CPU per request ${ratio(limited!.cpuUsPerRequest, keyed!.cpuUsPerRequest)}`,
  ];
  if (c1) {
    const [b1, r1, s1, k1, l1] = ["body-routing", "router", "router+state", "router+state keyed", "router+state limits"].map((n) => row(c1, n)!);
    out.push(
      `  added p50 at concurrency 1: stateful ${signed(s1!.p50 - b1!.p50)} ms (aim <= +${AIM_C1_ADDED_P50_MS.toFixed(2)} ms), stateless ${signed(r1!.p50 - b1!.p50)} ms, keyed ${signed(k1!.p50 - b1!.p50)} ms`,
      `  stateful p99 / stateless p99 at concurrency 1: ${ratio(s1!.p99, r1!.p99)} (aim <= ${AIM_C1_TAIL_RATIO.toFixed(2)}x); keyed ${ratio(k1!.p99, r1!.p99)}`,
    );
    const rtt1 = row(c1, rttName);
    if (rtt1) out.push(`  ${rttName} over stateless, p50 at concurrency 1: ${signed(rtt1.p50 - r1!.p50)} ms (aim <= +${RTT_TARGET_MS} ms)`);
    limitsLines.push(`  limits over keyed at concurrency 1: p50 ${signed(l1!.p50 - k1!.p50)} ms, p99 ${signed(l1!.p99 - k1!.p99)} ms`);
  } else {
    out.push("  (no concurrency-1 table: --c1-duration 0)");
  }
  return [...out, ...limitsLines];
}

/**
 * Miniflare's exit hook answers Ctrl-C with process.exit on the spot, which would leave
 * the temp dir behind; once everything is up, the first signal stops the load instead
 * and the finally block cleans up. A second one exits at once.
 *
 * Listeners are removed one by one, not with removeAllListeners: tsx's own handler,
 * which tells the tsx parent the signal arrived (else it re-sends it, then SIGKILLs),
 * is hidden from process.listeners() and must stay.
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

const fmtS = (ms: number) => String(ms / 1000);

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

process.exit(await main(process.argv.slice(2))); // stdout and stderr are synchronous for files and pipes on Linux
