/**
 * `npm run bench`: throughput and added latency of the Switchyard router, measured side
 * by side with a direct call to the upstream and with a bare pass-through Worker, in one
 * run, against one fake upstream, with one load generator. See bench/README.md.
 *
 *   tsx bench/run.ts [--duration S] [--warmup S] [--concurrency N] [--rounds N] [--stream]
 *
 * Processes: this one (orchestration and the load generator), the fake OpenAI upstream
 * in a child Node process (this file again, with --upstream-child), and two workerd
 * processes started through Miniflare: the router (src/cli/runtime.ts) and the
 * pass-through Worker (bench/passthrough-worker.ts). Only 127.0.0.1 is used.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { mergeSorted, runLoad, summarise, type LoadResult } from "./load";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const PASSTHROUGH_SOURCE = path.join(HERE, "passthrough-worker.ts");
const CHAT_PATH = "/v1/chat/completions";
const MODEL = "bench-model";
const REQUEST_TIMEOUT_MS = 10_000; // per request; the fake upstream answers in well under 1 ms
const UPSTREAM_READY_TIMEOUT_MS = 20_000;
const STARTUP_BUDGET_MS = 120_000; // wrangler import, esbuild, three workerd starts, on a busy machine
const DISPOSE_TIMEOUT_MS = 10_000;

const USAGE = `Usage: tsx bench/run.ts [--duration S] [--warmup S] [--concurrency N] [--rounds N] [--stream]

Runs the same closed-loop load against four targets, one after another:
  direct        the fake OpenAI upstream itself
  pass-through  a bare Worker on workerd that forwards each request to the upstream
  router        Switchyard on workerd, one pool with the upstream as its only replica,
                shared_state: false (weights alone, no Durable Object calls)
  router+state  the same with pins, leases and circuits in Durable Objects (the default)
and prints req/s, p50 and p99 latency per target and their ratios.

  --duration S     measured seconds per target and round (default 5)
  --warmup S       unmeasured seconds before each measurement (default 1)
  --concurrency N  concurrent requests, each over its own keep-alive connection (default 16)
  --rounds N       1: direct, pass-through, router, router+state; 2 (default) adds a second round in
                   reverse order so slow drift of the machine hits every target alike
  --stream         "stream": true requests (SSE responses) instead of plain JSON`;

interface Options {
  durationMs: number;
  warmupMs: number;
  concurrency: number;
  rounds: number;
  stream: boolean;
}

type TargetName = "direct" | "pass-through" | "router" | "router+state";
const TARGET_ORDER: TargetName[] = ["direct", "pass-through", "router", "router+state"];

interface Target {
  name: TargetName;
  url: string;
  /** Present on every response that really went through this target. */
  expectHeader: string;
}

interface Run {
  round: number;
  target: TargetName;
  result: LoadResult;
}

// ---------------------------------------------------------------------------------------
// Upstream child: `run.ts --upstream-child` serves the fake OpenAI upstream until its
// stdin closes (the parent exited or is done) or it gets SIGTERM.

async function upstreamChild(): Promise<void> {
  const { startFakeOpenAI } = await import("../src/dev/fake-openai");
  const server = await startFakeOpenAI({ id: "up" });
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    void server.close().finally(() => process.exit(0));
  };
  process.stdin.on("end", stop).on("error", stop).resume();
  process.on("SIGTERM", stop);
  process.on("SIGINT", () => {}); // the parent's Ctrl-C reaches us too; the parent decides when we stop
  process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
}

interface UpstreamProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startUpstreamProcess(): Promise<UpstreamProcess> {
  // tsx's loader, resolved from this package, so the child runs TypeScript as we do.
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), SELF, "--upstream-child"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.stdin?.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), DISPOSE_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };
  try {
    const port = await readPort(child);
    return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop };
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
}

function readPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => fail(new Error("fake upstream did not start in time")), UPSTREAM_READY_TIMEOUT_MS);
    const fail = (err: Error) => {
      clearTimeout(timer);
      lines.close();
      reject(err);
    };
    child.once("exit", (code) => fail(new Error(`fake upstream exited early (code ${code})`)));
    lines.on("line", (line) => {
      try {
        const { port } = JSON.parse(line) as { port: number };
        clearTimeout(timer);
        resolve(port);
      } catch {
        process.stderr.write(`upstream: ${line}\n`);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------
// Workers

interface Disposable {
  url: string;
  dispose(): Promise<void>;
}

/** The bare pass-through Worker on its own workerd, with the router's compat date and flags. */
async function startPassthrough(port: number, upstreamUrl: string): Promise<Disposable> {
  const [esbuild, wrangler, { WRANGLER_TOML }, { startOnDirectSocket }] = await Promise.all([
    import("esbuild"),
    import("wrangler"),
    import("../src/cli/paths"),
    import("../src/cli/direct-socket"),
  ]);
  const config = wrangler.unstable_readConfig({ config: WRANGLER_TOML });
  if (!config.compatibility_date) throw new Error(`${WRANGLER_TOML} has no compatibility_date`);
  const { code } = await esbuild.transform(await readFile(PASSTHROUGH_SOURCE, "utf8"), {
    loader: "ts",
    format: "esm",
    target: "es2022",
  });
  // Served like the router (src/cli/runtime.ts): Miniflare's direct socket, no entry Worker.
  return startOnDirectSocket(
    {
      name: "bench-passthrough",
      modules: [{ type: "ESModule", path: PASSTHROUGH_SOURCE.replace(/\.ts$/, ".mjs"), contents: code }],
      compatibilityDate: config.compatibility_date,
      compatibilityFlags: config.compatibility_flags,
      bindings: { UPSTREAM_URL: upstreamUrl },
    },
    { host: "127.0.0.1", port },
  );
}

/**
 * The router twice: `stateful` is the default config (affinity pins, leases, circuits:
 * one Durable Object round trip before the upstream call, one after in waitUntil);
 * stateless sets `shared_state: false` and routes on weights alone.
 */
async function startSwitchyard(port: number, upstreamUrl: string, persistTo: string, stateful: boolean): Promise<Disposable> {
  const { startRouter } = await import("../src/cli/runtime");
  const configText = `models:
  ${MODEL}: { pool: p }
pools:
  p:
    replicas:
      - { id: up, url: "${upstreamUrl}" }
routing:
  shared_state: ${stateful}
`;
  return startRouter({ port, host: "127.0.0.1", configText, persistTo });
}

// ---------------------------------------------------------------------------------------
// Orchestration

function parseOptions(argv: string[]): Options | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      duration: { type: "string" },
      warmup: { type: "string" },
      concurrency: { type: "string" },
      rounds: { type: "string" },
      stream: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return "help";
  const num = (name: string, raw: string | undefined, fallback: number, ok: (n: number) => boolean) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || !ok(n)) throw new Error(`--${name}: invalid value "${raw}"`);
    return n;
  };
  return {
    durationMs: num("duration", values.duration, 5, (n) => n > 0 && n <= 600) * 1000,
    warmupMs: num("warmup", values.warmup, 1, (n) => n >= 0 && n <= 600) * 1000,
    concurrency: num("concurrency", values.concurrency, 16, (n) => Number.isInteger(n) && n >= 1 && n <= 1024),
    rounds: num("rounds", values.rounds, 2, (n) => Number.isInteger(n) && n >= 1 && n <= 10),
    stream: values.stream ?? false,
  };
}

function requestBody(stream: boolean): string {
  return JSON.stringify({
    model: MODEL,
    messages: [{ role: "user", content: "Say hello in one word." }],
    ...(stream ? { stream: true } : {}),
  });
}

/** One request per target before any load: a misrouted or failing target stops the bench. */
async function checkTarget(t: Target, body: string): Promise<void> {
  const res = await fetch(t.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  if (!res.ok || !res.headers.has(t.expectHeader)) {
    throw new Error(`${t.name} (${t.url}) answered ${res.status} ${res.headers.has(t.expectHeader) ? "" : `without ${t.expectHeader} `}: ${text.slice(0, 300)}`);
  }
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

  // Bounded no matter what: a hung target or a stuck start cannot keep the bench alive.
  const perRunMs = o.durationMs + o.warmupMs + 2 * REQUEST_TIMEOUT_MS;
  const budgetMs = STARTUP_BUDGET_MS + o.rounds * TARGET_ORDER.length * perRunMs;
  let persistTo: string | undefined;
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: still running after ${Math.round(budgetMs / 1000)} s, giving up\n`);
    // Miniflare's exit hook stops workerd and the upstream child sees its stdin close.
    if (persistTo) rmSync(persistTo, { recursive: true, force: true });
    process.exit(1);
  }, budgetMs);
  watchdog.unref();

  const cleanups: Array<() => Promise<void>> = [];
  const stopped = new AbortController();
  try {
    const dir = (persistTo = await mkdtemp(path.join(os.tmpdir(), "switchyard-bench-")));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));

    const upstream = await startUpstreamProcess();
    cleanups.push(upstream.stop);
    const { freePort } = await import("../src/cli/ports");
    const [routerPort, statefulPort, passPort] = [await freePort(), await freePort(), await freePort()];
    const [router, stateful, pass] = await Promise.all([
      startSwitchyard(routerPort, upstream.url, path.join(dir, "stateless"), false).then((r) => (cleanups.push(() => r.dispose()), r)),
      startSwitchyard(statefulPort, upstream.url, path.join(dir, "stateful"), true).then((r) => (cleanups.push(() => r.dispose()), r)),
      startPassthrough(passPort, upstream.url).then((p) => (cleanups.push(() => p.dispose()), p)),
    ]);
    takeOverSignals(stopped);

    const targets: Record<TargetName, Target> = {
      direct: { name: "direct", url: upstream.url + CHAT_PATH, expectHeader: "x-fake-server" },
      "pass-through": { name: "pass-through", url: pass.url + CHAT_PATH, expectHeader: "x-fake-server" },
      router: { name: "router", url: router.url + CHAT_PATH, expectHeader: "x-switchyard-replica" },
      "router+state": { name: "router+state", url: stateful.url + CHAT_PATH, expectHeader: "x-switchyard-replica" },
    };
    const body = requestBody(o.stream);
    for (const name of TARGET_ORDER) await checkTarget(targets[name], body);

    const cpus = os.cpus().length;
    process.stdout.write(
      [
        `Switchyard bench: ${o.stream ? "streamed (SSE)" : "plain JSON"} POST ${CHAT_PATH}, ${o.concurrency} concurrent, ` +
          `${fmtS(o.durationMs)} s per target after ${fmtS(o.warmupMs)} s warmup, ${o.rounds} round${o.rounds > 1 ? "s" : ""}`,
        `  upstream      fake OpenAI (src/dev/fake-openai.ts) in a child Node process, pid ${upstream.pid}, ${upstream.url}`,
        `  pass-through  bench/passthrough-worker.ts on workerd via Miniflare, ${pass.url}`,
        `  router        src/index.ts on workerd via Miniflare (src/cli/runtime.ts), shared_state: false, ${router.url}`,
        `  router+state  the same with pins, leases and circuits in Durable Objects (the default), ${stateful.url}`,
        `  load          closed loop, node:http keep-alive, in this Node process (pid ${process.pid})`,
        `  machine       ${cpus} CPU${cpus > 1 ? "s" : ""}, load average ${os.loadavg()[0]!.toFixed(2)}; every process above shares them`,
        "",
      ].join("\n"),
    );

    const runs: Run[] = [];
    for (let round = 1; round <= o.rounds && !stopped.signal.aborted; round++) {
      const order = round % 2 === 1 ? TARGET_ORDER : [...TARGET_ORDER].reverse();
      for (const name of order) {
        if (stopped.signal.aborted) break;
        const t = targets[name];
        const load = {
          url: t.url,
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          concurrency: o.concurrency,
          expectHeader: t.expectHeader,
          requestTimeoutMs: REQUEST_TIMEOUT_MS,
          signal: stopped.signal,
        };
        if (o.warmupMs > 0) await runLoad({ ...load, durationMs: o.warmupMs });
        const result = await runLoad({ ...load, durationMs: o.durationMs });
        if (stopped.signal.aborted) break;
        runs.push({ round, target: name, result });
        process.stdout.write(
          `  round ${round}  ${name.padEnd(12)}  ${fmtRps(result.rps).padStart(8)} req/s  p50 ${fmt(result.p50)} ms  p99 ${fmt(result.p99)} ms` +
            `${result.errors ? `  errors ${result.errors}` : ""}\n`,
        );
      }
    }
    if (stopped.signal.aborted) {
      process.stderr.write("bench: interrupted\n");
      return 130;
    }
    process.stdout.write(`\n${report(runs, o)}`);
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

// ---------------------------------------------------------------------------------------
// Report

interface Pooled {
  target: TargetName;
  count: number;
  errors: number;
  errorKinds: Record<string, number>;
  rps: number;
  p50: number;
  p99: number;
}

/** Rounds of one target pooled: requests and time summed, percentiles over all samples. */
function pool(runs: Run[], target: TargetName): Pooled {
  const mine = runs.filter((r) => r.target === target).map((r) => r.result);
  const ok = mine.reduce((n, r) => n + r.ok, 0);
  const seconds = mine.reduce((n, r) => n + r.elapsedMs, 0) / 1000;
  const errorKinds: Record<string, number> = {};
  for (const r of mine) for (const [k, v] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + v;
  const { p50, p99 } = summarise(mergeSorted(mine.map((r) => r.latenciesMs)));
  return {
    target,
    count: mine.reduce((n, r) => n + r.count, 0),
    errors: mine.reduce((n, r) => n + r.errors, 0),
    errorKinds,
    rps: seconds > 0 ? ok / seconds : 0,
    p50,
    p99,
  };
}

function report(runs: Run[], o: Options): string {
  const rows = TARGET_ORDER.map((t) => pool(runs, t));
  const [direct, pass, router, stateful] = rows as [Pooled, Pooled, Pooled, Pooled];
  const header = ["target", "requests", "req/s", "p50 ms", "p99 ms", "errors", "req/s vs direct", "added p50 ms", "added p99 ms"];
  const table = rows.map((r) => [
    r.target,
    String(r.count),
    fmtRps(r.rps),
    fmt(r.p50),
    fmt(r.p99),
    String(r.errors),
    r === direct ? "1.00x" : ratio(r.rps, direct.rps),
    r === direct ? "-" : signed(r.p50 - direct.p50),
    r === direct ? "-" : signed(r.p99 - direct.p99),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const out = [line(header), line(widths.map((w) => "-".repeat(w))), ...table.map(line)];

  out.push(
    "",
    `router vs pass-through: ${ratio(router.rps, pass.rps)} req/s, added p50 ${signed(router.p50 - pass.p50)} ms, added p99 ${signed(router.p99 - pass.p99)} ms`,
    `stateful vs stateless router: ${ratio(stateful.rps, router.rps)} req/s, added p50 ${signed(stateful.p50 - router.p50)} ms, added p99 ${signed(stateful.p99 - router.p99)} ms`,
  );
  if (o.rounds > 1) {
    out.push(
      `${o.rounds} rounds, odd ones in the order direct → pass-through → router → router+state, even ones reversed; each row pools` +
        " its rounds (requests and seconds summed, percentiles over all requests).",
    );
  }
  out.push('"added" = this row minus the direct row: what the hop (and, for the router, its routing) costs under this load.');
  for (const r of rows) {
    if (r.errors === 0) continue;
    const kinds = Object.entries(r.errorKinds).map(([k, v]) => `${k} ×${v}`).join(", ");
    out.push(`WARNING: ${r.target} had ${r.errors} errors (${kinds}); its req/s counts successes only`);
  }
  return `${out.join("\n")}\n`;
}

const fmt = (ms: number) => (Number.isNaN(ms) ? "n/a" : ms.toFixed(2));
const fmtRps = (rps: number) => rps.toFixed(0);
const fmtS = (ms: number) => String(ms / 1000);
const signed = (ms: number) => (Number.isNaN(ms) ? "n/a" : `${ms >= 0 ? "+" : ""}${ms.toFixed(2)}`);
const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : "n/a");

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------

const argv = process.argv.slice(2);
if (argv[0] === "--upstream-child") {
  await upstreamChild();
} else {
  process.exit(await main(argv)); // stdout and stderr are synchronous for files and pipes on Linux
}
