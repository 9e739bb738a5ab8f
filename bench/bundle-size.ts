/**
 * Size of the router's Worker bundle: as `serve` and the bench run it (runtime.ts's
 * esbuild settings, unminified) and minified (what `wrangler deploy --minify` uploads).
 * gzip is counted as wrangler counts it for its "Total Upload" line and the platform's
 * size limit: zlib's default level over the whole script.
 */
import { gzipSync } from "node:zlib";
import { bundleWorker } from "../tools/cli/bundle";
import type { RouterBuild } from "../tools/cli/runtime";
import { align } from "./report";
import { DASHBOARD_HTML } from "../src/platform/dashboard/page";
import { DASHBOARD_JS } from "../src/platform/dashboard/script";

export interface BundleSize {
  bytes: number;
  gzipBytes: number;
  minBytes: number;
  minGzipBytes: number;
}

export async function measureBundle(build: RouterBuild): Promise<BundleSize> {
  const plain = Buffer.from(build.script.contents);
  const min = Buffer.from(await bundleWorker(build.worker.main, build.worker.define, { minify: true }));
  return { bytes: plain.length, gzipBytes: gzipSync(plain).length, minBytes: min.length, minGzipBytes: gzipSync(min).length };
}

export function bundleReport(size: BundleSize): string[] {
  const kib = (bytes: number) => `${bytes} B (${(bytes / 1024).toFixed(1)} KiB)`;
  return [
    "Router Worker bundle (src/index.ts, bundled as tools/cli/runtime.ts does):",
    ...align([
      ["", "bytes", "gzip"],
      ["  as served", kib(size.bytes), kib(size.gzipBytes)],
      ["  minified", kib(size.minBytes), kib(size.minGzipBytes)],
    ]),
    // Strings in the bundle, so minifying leaves them as written: the same bytes in both rows.
    `  of which the dashboard's page and script (GET /dashboard): ${kib(Buffer.byteLength(DASHBOARD_HTML) + Buffer.byteLength(DASHBOARD_JS))}`,
  ];
}
