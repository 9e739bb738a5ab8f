/**
 * `npm run bench:profile`: where the router spends its CPU. Runs a Worker on workerd
 * (Miniflare's direct socket, as the bench does), drives it with the bench's load
 * generator against a fake upstream in a child process, records a V8 CPU profile of the
 * Worker's isolate through the inspector, and prints the functions with the most self
 * time, aggregated by function and by source file.
 *
 *   tsx bench/profile.ts [--target router|stateful|keyed|limits|body-routing|passthrough] [--duration S] [--concurrency N] [--top N]
 *
 * Targets, as in `npm run bench`: router = seed 004's routing.yaml (two replicas 60/40)
 * with shared_state: false; stateful = the same file as it is (affinity, leases and
 * circuits in Durable Objects); keyed = the models:/pools: config with affinity and
 * client keys on; body-routing and passthrough = the bare Workers.
 *
 * Profiling costs time itself (sampling every 100 µs), so read shares, not absolute
 * numbers, and compare targets profiled the same way.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as esbuild from "esbuild";
import { workerBuildOptions } from "../tools/cli/bundle";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { runLoad } from "./load";
import { BODY_ROUTING_SOURCE, CLIENT_KEY, MODEL, buildBodyRouting, keyedConfig, seed004Config, seed004Vars } from "./workers";

const USAGE = `Usage: npm run bench:profile -- [--target router|stateful|keyed|limits|body-routing|passthrough]
         [--duration S] [--concurrency N] [--top N] [--heap] [--callers NAME] [--first] [--worker FILE]

A V8 CPU profile of the Worker's isolate under the bench's load (or of a fresh isolate's
first request with --first); prints self and total time by function and by file.
  --heap           also sample allocations: bytes allocated per request by function
  --callers NAME   also list who calls functions named NAME
  --worker FILE    profile any bare Worker source (given UPSTREAM_URL) instead of a target`;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(HERE);
const SAMPLING_INTERVAL_US = 100; // V8's finest useful sampling; coarser hides short functions
const HEAP_SAMPLING_BYTES = 1024; // mean bytes between allocation samples; finer costs more under load

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/**
 * Bytes allocated per request by function, from the sampling heap profile with collected
 * objects included: an estimate of the allocation rate, which is what the garbage
 * collector's share follows. Native allocations (Headers, streams) show as "(V8 API)".
 */
function allocations(head: HeapNode, requests: number, top: number): string {
  const byFunction = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const key = `${functionName || "(anonymous)"}  ${url ? url.replace(/^.*\//, "") : "(native)"}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + n.selfSize);
    total += n.selfSize;
    for (const c of n.children) walk(c);
  };
  walk(head);
  const rows = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, bytes]) => `${(bytes / requests).toFixed(0).padStart(7)} B/req  ${name}`);
  return `allocated by function, collected or not (${(total / requests).toFixed(0)} B/request in all):\n${rows.join("\n")}\n`;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: "string", default: "router" },
      duration: { type: "string", default: "5" },
      concurrency: { type: "string", default: "16" },
      top: { type: "string", default: "30" },
      /** Also sample allocations (V8's sampling heap profiler): bytes allocated by function. */
      heap: { type: "boolean", default: false },
      /** Also list who calls functions of this name (self time by calling function). */
      callers: { type: "string" },
      /** Profile only the first request of the fresh isolate (no warmup, no load): where a cold start's first response goes. */
      first: { type: "boolean", default: false },
      /** Any bare Worker source (called with UPSTREAM_URL) instead of a named target: for experiments. */
      worker: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const target = values.worker ? "worker" : values.target!;
  workerSource = values.worker && path.resolve(values.worker);
  const durationMs = Number(values.duration) * 1000;
  const concurrency = Number(values.concurrency);

  const upstream = await startUpstream();
  const dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-profile-"));
  const inspectorPort = 9300 + Math.floor(Math.random() * 500);
  const mf = await startWorker(target, upstream.url, dir, inspectorPort);
  try {
    const url = (await mf.unsafeGetDirectURL("profiled")).origin + "/v1/chat/completions";
    const body = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Say hello in one word." }] });
    // As the bench sends it: the client address Cloudflare's edge would add, the key when there is one.
    const headers: Record<string, string> = { "content-type": "application/json", "cf-connecting-ip": "127.0.0.1" };
    if (target === "keyed" || target === "limits") headers.authorization = `Bearer ${CLIENT_KEY}`;
    const load = { url, method: "POST", headers, body, concurrency, durationMs: 1_000 };
    if (values.first) {
      const inspector = await connectInspector(inspectorPort);
      await inspector.call("Profiler.enable");
      await inspector.call("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
      await inspector.call("Profiler.start");
      const t0 = performance.now();
      const res = await fetch(url, { method: "POST", headers, body });
      await res.text();
      const ms = performance.now() - t0;
      const { profile } = (await inspector.call("Profiler.stop")) as { profile: { nodes: ProfileNode[] } };
      inspector.close();
      process.stdout.write(`${target}: first request ${res.status} in ${ms.toFixed(1)} ms (under the profiler)\n\n`);
      process.stdout.write(summarise(profile.nodes, Number(values.top)));
      return;
    }
    await runLoad(load); // warm up: JIT, connections, config cache

    const inspector = await connectInspector(inspectorPort);
    await inspector.call("Profiler.enable");
    await inspector.call("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
    await inspector.call("Profiler.start");
    if (values.heap) await inspector.call("HeapProfiler.startSampling", { samplingInterval: HEAP_SAMPLING_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    const result = await runLoad({ ...load, durationMs });
    const { profile } = (await inspector.call("Profiler.stop")) as { profile: { nodes: ProfileNode[] } };
    const heap = values.heap ? ((await inspector.call("HeapProfiler.stopSampling")) as { profile: { head: HeapNode } }).profile.head : null;
    inspector.close();
    process.stdout.write(`${target}: ${result.rps.toFixed(0)} req/s under the profiler, p50 ${result.p50.toFixed(2)} ms, errors ${result.errors}\n`);
    process.stdout.write(`isolate busy per request: ${busyPerRequestUs(profile.nodes, result.count).toFixed(1)} µs (samples not idle × ${SAMPLING_INTERVAL_US} µs ÷ requests)\n\n`);
    process.stdout.write(summarise(profile.nodes, Number(values.top)));
    if (values.callers) process.stdout.write(`\n${callers(profile.nodes, values.callers, Number(values.top))}`);
    if (heap) process.stdout.write(`\n${allocations(heap, result.count, Number(values.top))}`);
  } finally {
    await mf.dispose();
    await upstream.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

let workerSource: string | undefined;

async function startWorker(target: string, upstreamUrl: string, dir: string, inspectorPort: number): Promise<Miniflare> {
  const toml = await readFile(path.join(ROOT, "wrangler.toml"), "utf8");
  const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)![1]!;
  const compatibilityFlags = JSON.parse(/^compatibility_flags\s*=\s*(\[[^\]]*\])/m.exec(toml)![1]!) as string[];
  const bare = target === "passthrough" || target === "body-routing" || target === "worker";
  const entry = target === "worker" ? workerSource! : target === "passthrough" ? path.join(HERE, "passthrough-worker.ts") : target === "body-routing" ? BODY_ROUTING_SOURCE : path.join(ROOT, "src/index.ts");
  // As served: unminified, so functions keep their names, and without esbuild's keepNames,
  // whose __name call per closure created would show in the profile as a cost the
  // deployed Worker does not pay.
  const built = await esbuild.build(workerBuildOptions(entry));
  const config = target === "keyed" || target === "limits" ? keyedConfig(upstreamUrl, target === "limits") : await seed004Config(target === "stateful");
  const bindings = target === "body-routing" ? ((await buildBodyRouting(upstreamUrl)).bindings as Record<string, string>) : { UPSTREAM_URL: upstreamUrl, ...seed004Vars(upstreamUrl) };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      name: "profiled",
      modules: [{ type: "ESModule", path: path.join(dir, "index.mjs"), contents: built.outputFiles[0]!.text }],
      modulesRoot: dir,
      compatibilityDate,
      compatibilityFlags,
      kvNamespaces: { CONFIG: "CONFIG" },
      durableObjects:
        bare
          ? {}
          : { POOL_STATE: { className: "PoolState", useSQLite: true }, AFFINITY: { className: "AffinityShard", useSQLite: true }, BANDIT: { className: "BanditState", useSQLite: true }, ROUTE_ENVELOPE: { className: "RouteEnvelope", useSQLite: true }, PROVIDER_QUOTA: { className: "ProviderQuota", useSQLite: true }, CONCURRENCY_SLOTS: { className: "ConcurrencySlots", useSQLite: true }, PRINCIPAL_LIMITS: { className: "PrincipalLimits", useSQLite: true }, GRAPH_COUNTERS: { className: "GraphCounters", useSQLite: true } },
      bindings: { ...bindings, CONFIG_REFRESH_MS: "5000" },
      resourcePersistencePath: dir,
      inspectorPort,
      unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
    }),
  );
  await mf.ready;
  if (!bare) {
    const { CONFIG_POINTER_KEY, configBlobKey, configVersionId } = await import("../src/core/config/kv-keys");
    const kv = await mf.getKVNamespace("CONFIG");
    // Stored as the publishers store it (documents as compact JSON), so the first request reads it as in production.
    const { encodeBlob } = await import("../src/core/config/blob");
    const { parseYamlDocuments } = await import("../src/core/config/yaml");
    const parsed = parseYamlDocuments(config);
    const blob = parsed.ok ? encodeBlob(parsed.documents) : config;
    const version = await configVersionId(blob);
    await kv.put(configBlobKey(version), blob);
    await kv.put(CONFIG_POINTER_KEY, version);
  }
  return mf;
}

/** The fake upstream in its own process, so it does not share the load generator's event loop. */
async function startUpstream(): Promise<{ url: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), "-e", `
    const { startFakeOpenAI } = await import(${JSON.stringify(path.join(ROOT, "tools/fakes/fake-openai.ts"))});
    const server = await startFakeOpenAI({ id: "up" });
    console.log(JSON.stringify({ port: server.port }));
    process.stdin.on("end", () => server.close().then(() => process.exit(0))).resume();
  `], { stdio: ["pipe", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`upstream exited ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.stdin!.end();
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

async function connectInspector(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string; title?: string; id?: string }[];
  const chosen = targets.find((t) => (t.title ?? t.id ?? "").includes("profiled")) ?? targets[0]!;
  const ws = new WebSocket(chosen.webSocketDebuggerUrl); // Node 22's global WebSocket
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", reject, { once: true });
  });
  let next = 1;
  const pending = new Map<number, (result: unknown) => void>();
  ws.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  return {
    call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
      const id = next++;
      ws.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve) => pending.set(id, resolve));
    },
    close: () => ws.close(),
  };
}

/**
 * The isolate's CPU per request: what is comparable across targets and runs whatever
 * else the machine is doing, unlike req/s. Sampling is not exact, so read differences of
 * a few µs as noise.
 */
function busyPerRequestUs(nodes: ProfileNode[], requests: number): number {
  const idle = nodes.filter((n) => n.callFrame.functionName === "(idle)").reduce((n, node) => n + node.hitCount, 0);
  const total = nodes.reduce((n, node) => n + node.hitCount, 0);
  return requests > 0 ? ((total - idle) * SAMPLING_INTERVAL_US) / requests : Number.NaN;
}

function summarise(nodes: ProfileNode[], top: number): string {
  const total = nodes.reduce((n, node) => n + node.hitCount, 0);
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const node of nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url ? url.replace(/^.*\//, "") : "(native)";
    const fn = `${functionName || "(anonymous)"}  ${file}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + node.hitCount);
    byFile.set(file, (byFile.get(file) ?? 0) + node.hitCount);
  }
  const rows = (map: Map<string, number>) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, hits]) => `${((100 * hits) / total).toFixed(1).padStart(5)}%  ${name}`)
      .join("\n");
  return (
    `self time by function (${total} samples):\n${rows(byFunction)}\n\nself time by file:\n${rows(byFile)}\n\n` +
    `total time by function (self + callees; a function counted once per stack):\n${rows(inclusive(nodes))}\n`
  );
}

/** Self time of functions named `name`, by the function that called them. */
function callers(nodes: ProfileNode[], name: string, top: number): string {
  const parent = new Map<number, ProfileNode>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n);
  const by = new Map<string, number>();
  let total = 0;
  for (const n of nodes) {
    if (n.callFrame.functionName !== name || n.hitCount === 0) continue;
    const p = parent.get(n.id);
    const key = p ? `${p.callFrame.functionName || "(anonymous)"}  ${p.callFrame.url.replace(/^.*\//, "") || "(native)"}:${p.callFrame.lineNumber + 1}` : "(root)";
    by.set(key, (by.get(key) ?? 0) + n.hitCount);
    total += n.hitCount;
  }
  const rows = [...by].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => `${((100 * v) / Math.max(1, total)).toFixed(1).padStart(5)}%  ${k}`);
  return `callers of ${name} (${total} samples):\n${rows.join("\n")}\n`;
}

/** Samples under each function, counted once per stack even when it recurses. */
function inclusive(nodes: ProfileNode[]): Map<string, number> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const childIds = new Set(nodes.flatMap((n) => n.children ?? []));
  const totals = new Map<string, number>();
  const name = (n: ProfileNode) => `${n.callFrame.functionName || "(anonymous)"}  ${n.callFrame.url ? n.callFrame.url.replace(/^.*\//, "") : "(native)"}:${n.callFrame.lineNumber + 1}`;
  const walk = (node: ProfileNode, onStack: Set<string>): number => {
    let hits = node.hitCount;
    const key = name(node);
    const fresh = !onStack.has(key);
    if (fresh) onStack.add(key);
    for (const id of node.children ?? []) hits += walk(byId.get(id)!, onStack);
    if (fresh) {
      onStack.delete(key);
      totals.set(key, (totals.get(key) ?? 0) + hits);
    }
    return hits;
  };
  for (const root of nodes.filter((n) => !childIds.has(n.id))) walk(root, new Set());
  return totals;
}

await main();
