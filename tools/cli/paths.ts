import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repo this CLI ships in: wrangler.toml, the Worker source and examples live here. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const WRANGLER_TOML = path.join(PROJECT_ROOT, "wrangler.toml");
export const BUILD_DIR = path.join(PROJECT_ROOT, ".switchyard/build");

/** wrangler's default `--persist-to`, taken from the cwd as the CLI docs promise. */
export function defaultPersistTo(): string {
  return path.resolve(".wrangler/state");
}

/**
 * wrangler keeps local resources in `<persist-to>/v3/<plugin>` (getDefaultPersistRoot in
 * wrangler's cli.js) while Miniflare's resourcePersistencePath is that `v3` directory.
 * Verified: keys written by `wrangler kv key put --local --persist-to X` are read by a
 * router on `X/v3`, including while it runs.
 */
export function resourcePersistencePath(persistTo: string): string {
  return path.join(path.resolve(persistTo), "v3");
}
