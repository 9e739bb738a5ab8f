import * as esbuild from "esbuild";

/**
 * The router's Worker as wrangler builds it: one ESM file (browser platform, workerd
 * conditions, `cloudflare:*` and `node:*` left to the runtime). Dynamic `import()`s stay
 * in that file, wrapped so their code runs on first import; no code splitting, since
 * workerd compiles every module of a Worker at startup anyway (and wrangler does not
 * split either). test/e2e/bundle.test.ts holds this build to its size budget.
 */
export function workerBuildOptions(entry: string, define: Record<string, string> = {}) {
  return {
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*", "node:*"],
    define,
    write: false,
    logLevel: "silent",
  } satisfies esbuild.BuildOptions;
}

/**
 * The bundle's text. `serve` runs the unminified build (readable stack traces); the bench
 * also builds it minified to report the size a `wrangler deploy --minify` would upload.
 */
export async function bundleWorker(entry: string, define: Record<string, string>, opts: { minify?: boolean } = {}): Promise<string> {
  const result = await esbuild.build({ ...workerBuildOptions(entry, define), minify: opts.minify ?? false });
  return result.outputFiles[0]!.text;
}
