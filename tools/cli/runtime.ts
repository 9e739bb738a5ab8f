/**
 * Runs the router Worker locally on workerd through Miniflare, without `wrangler dev`:
 * wrangler's dev server puts a proxy Worker in front of the user Worker, which costs
 * about 8x in throughput, and `npm run bench` measures this very setup. The Worker is
 * served on Miniflare's direct socket, without Miniflare's entry Worker either (see
 * direct-socket.ts for why and for what the Worker sees differently).
 *
 * wrangler.toml stays the one source of truth: bindings, compatibility date and flags
 * come from wrangler's own `unstable_getMiniflareWorkerOptions`.
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Miniflare, convertV4MiniflareOptions, type Json, type V4WorkerOptionsShape } from "miniflare";
import { encodeBlob } from "../../src/core/config/blob";
import { parseYamlDocuments } from "../../src/core/config/yaml";
import { CONFIG_POINTER_KEY, configBlobKey, configVersionId } from "../../src/core/config/kv-keys";
import { bundleWorker } from "./bundle";
import { startOnDirectSocket } from "./direct-socket";
import { BUILD_DIR, WRANGLER_TOML, defaultPersistTo, resourcePersistencePath } from "./paths";

export interface RouterOptions {
  /** Port of the direct socket the router answers on; 0 lets workerd pick a free one. */
  port: number;
  host?: "127.0.0.1";
  /** Config document to publish into the local KV before the router starts. */
  configText?: string;
  /** Root of local state, as wrangler's `--persist-to` (default `.wrangler/state` in the cwd). */
  persistTo?: string;
  /** Plain-text bindings on top of wrangler.toml's [vars]: ADMIN_TOKEN, `${VAR}` secrets. */
  vars?: Record<string, string>;
  /** A bundle from buildRouter(), so several routers (the bench) share one build. */
  build?: RouterBuild;
  /** Run the Worker's cron once when it is up (default true); the bench's cold starts time a truly fresh isolate. */
  startupCron?: boolean;
  /**
   * Then run it every minute, as wrangler.toml's [triggers] does in production (`serve`,
   * `demo`): pools' objects stop their health checks when no config has named them for
   * SPEC_UNTOLD_MS (src/core/pool/machine.ts), and the cron is what names an idle pool.
   */
  cronEveryMinute?: boolean;
}

const CRON_EVERY_MS = 60_000; // wrangler.toml's "* * * * *"

export interface Router {
  url: string;
  /** Version the `config/current` pointer names right now, or null if nothing is published. */
  configVersion(): Promise<string | null>;
  dispose(): Promise<void>;
}

/** The router as wrangler.toml describes it, bundled and ready to start. */
export interface RouterBuild {
  worker: WranglerWorker;
  script: { path: string; contents: string };
}

const CONFIG_BINDING = "CONFIG";

export async function buildRouter(): Promise<RouterBuild> {
  const worker = await readWranglerWorker();
  return { worker, script: await writeBundle(worker.main, worker.define) };
}

export async function startRouter(opts: RouterOptions): Promise<Router> {
  const host = opts.host ?? "127.0.0.1";
  const persistRoot = resourcePersistencePath(opts.persistTo ?? defaultPersistTo());
  const worker = opts.build?.worker ?? (await readWranglerWorker());
  const [script] = await Promise.all([
    opts.build?.script ?? writeBundle(worker.main, worker.define),
    opts.configText === undefined ? undefined : seedConfig(persistRoot, worker.options, opts.configText),
  ]);

  const { mf, url, dispose } = await startOnDirectSocket(
    {
      ...worker.options,
      bindings: { ...worker.vars, ...opts.vars },
      modules: [{ type: "ESModule", path: script.path, contents: script.contents }],
      modulesRoot: path.dirname(script.path), // stack traces name "index.mjs", not a ../../ path
      resourcePersistencePath: persistRoot,
    },
    { host, port: opts.port },
  );
  // What the cron does in production (wrangler.toml [triggers]): pools learn the config's
  // spec at once, so health checks run from the start rather than from the first request.
  try {
    if (opts.startupCron !== false) await (await mf.getWorker()).scheduled({ cron: "* * * * *" });
  } catch (error) {
    process.stderr.write(`switchyard: the startup cron run failed (health checks start with the first request): ${(error as Error).message}\n`);
  }
  const cron = opts.cronEveryMinute
    ? setInterval(() => {
        mf.getWorker()
          .then((worker) => worker.scheduled({ cron: "* * * * *" }))
          .catch((error: unknown) => process.stderr.write(`switchyard: a cron run failed: ${(error as Error).message}\n`));
      }, CRON_EVERY_MS)
    : null;
  cron?.unref();
  return {
    url,
    configVersion: async () => (await mf.getKVNamespace(CONFIG_BINDING)).get(CONFIG_POINTER_KEY),
    dispose: async () => {
      if (cron) clearInterval(cron);
      await dispose();
    },
  };
}

export interface WranglerWorker {
  main: string;
  define: Record<string, string>;
  /** Miniflare options for bindings, compat date and flags; no code, no plain vars. */
  options: V4WorkerOptionsShape;
  /** wrangler.toml [vars] only. */
  vars: Record<string, Json>;
}

export async function readWranglerWorker(): Promise<WranglerWorker> {
  // Imported lazily: wrangler is ~15 MB of JS (about a second to load) and only its
  // config reader is needed here.
  const wrangler = await import("wrangler");
  const config = wrangler.unstable_readConfig({ config: WRANGLER_TOML });
  // The helper also merges `.dev.vars` and logs that it did; serve decides which env
  // file to use itself (--env-file), so silence it and take only wrangler.toml's [vars].
  const { workerOptions, define, main } = withWranglerLogLevel("error", () =>
    wrangler.unstable_getMiniflareWorkerOptions(config),
  );
  if (!main) throw new Error(`${WRANGLER_TOML} has no "main" entry point`);
  // wrangler types these as Omit<> of a type with an index signature, which TypeScript
  // flattens to { [key: string]: unknown }; they are V4 worker options at runtime.
  const { bindings: _withDevVars, ...options } = workerOptions as V4WorkerOptionsShape;
  return { main, define, options: { ...options, name: config.name }, vars: config.vars as Record<string, Json> };
}

function withWranglerLogLevel<T>(level: string, fn: () => T): T {
  const previous = process.env.WRANGLER_LOG;
  process.env.WRANGLER_LOG = level;
  try {
    return fn();
  } finally {
    if (previous === undefined) delete process.env.WRANGLER_LOG;
    else process.env.WRANGLER_LOG = previous;
  }
}

/**
 * The bundle, also written to .switchyard/build for inspection, via rename so concurrent
 * routers (the e2e suite) never read a half-written file; Miniflare gets the contents
 * directly.
 */
async function writeBundle(entry: string, define: Record<string, string>): Promise<{ path: string; contents: string }> {
  const outfile = path.join(BUILD_DIR, "index.mjs");
  const contents = await bundleWorker(entry, define);
  await mkdir(BUILD_DIR, { recursive: true });
  const tmp = `${outfile}.${process.pid}.${randomUUID()}.tmp`; // unique even for two routers in one process
  await writeFile(tmp, contents);
  await rename(tmp, outfile);
  return { path: outfile, contents };
}

/** Publishes a config into local KV under `persistTo` without starting a router. */
export async function publishLocalConfig(build: RouterBuild, persistTo: string, text: string): Promise<string> {
  return seedConfig(resourcePersistencePath(persistTo), build.worker.options, text);
}

/**
 * Publishes a config as the CLI's `push` does (blob, then pointer), through a KV-only
 * Miniflare on the same persistence root, so the router never answers a request with a
 * previous config. Re-serving an unchanged document reuses its version instead of
 * piling up identical blobs. Text that does not parse goes in as it is, for the Worker
 * to reject and report like any bad version.
 */
async function seedConfig(persistRoot: string, worker: WranglerWorker["options"], text: string): Promise<string> {
  const parsed = parseYamlDocuments(text);
  const blob = parsed.ok ? encodeBlob(parsed.documents) : text;
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: "",
      kvNamespaces: worker.kvNamespaces,
      resourcePersistencePath: persistRoot,
      cf: false, // no request.cf needed, and no download attempt of Miniflare's cf.json
    }),
  );
  try {
    const kv = await mf.getKVNamespace(CONFIG_BINDING);
    const current = await kv.get(CONFIG_POINTER_KEY);
    if (current !== null && (await kv.get(configBlobKey(current))) === blob) return current;
    const version = await configVersionId(blob);
    await kv.put(configBlobKey(version), blob);
    await kv.put(CONFIG_POINTER_KEY, version);
    return version;
  } finally {
    await mf.dispose();
  }
}
