import * as esbuild from "esbuild";

/**
 * The router's Worker bundle, one ESM file, built with the settings wrangler uses for
 * a Worker (browser platform, workerd conditions, `cloudflare:*` and `node:*` left to the
 * runtime). `serve` runs the unminified build (readable stack traces); the bench also
 * builds it minified to report the size a `wrangler deploy --minify` would upload.
 */
export async function bundleWorker(entry: string, define: Record<string, string>, opts: { minify?: boolean } = {}): Promise<string> {
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*", "node:*"],
    define,
    minify: opts.minify ?? false,
    write: false,
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}
