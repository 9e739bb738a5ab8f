import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CONFIG_POINTER_KEY, configBlobKey, configVersionId } from "../../../src/core/config/kv-keys";
import { parseFlags, UsageError, type Command } from "../args";
import { checkConfigFile, printWarnings } from "../config-file";
import { PROJECT_ROOT, WRANGLER_TOML, defaultPersistTo } from "../paths";

// The project's own wrangler (npx or a global install could be another version), run by
// the project's own Node 22 when present: wrangler refuses Node < 22.12, and
// `node bin/switchyard.mjs` outside npm scripts may well be the system's Node 20.
const WRANGLER_BIN = path.join(PROJECT_ROOT, "node_modules/.bin/wrangler");
const PROJECT_NODE = path.join(PROJECT_ROOT, "node_modules/.bin/node");

export const command: Command = {
  usage: `Usage: switchyard push FILE [--remote] [--persist-to DIR]

Validates FILE and publishes it to the CONFIG KV namespace as a new immutable version,
then points config/current at it. Running routers pick it up within CONFIG_REFRESH_MS.
Prints the version id.

  --remote           publish to the deployed namespace (needs "wrangler login" and a
                     deployed Worker); default is the local KV "switchyard serve" reads
  --persist-to DIR   local state directory (default .wrangler/state)

\${VAR} references are published as written and resolve from the Worker's secrets.`,

  async run(argv) {
    const { values, positionals } = parseFlags(argv, {
      remote: { type: "boolean" },
      "persist-to": { type: "string" },
    });
    if (positionals.length !== 1) throw new UsageError("push takes exactly one FILE");
    if (values.remote && values["persist-to"] !== undefined) throw new UsageError("--persist-to only applies to the local KV");
    const file = positionals[0]!;
    const checked = checkConfigFile(file, { vars: process.env, unresolvedVars: "defer" });
    if (!checked) return 1;
    printWarnings(checked.warnings);

    // Always an explicit, absolute --persist-to: wrangler's own default is relative to
    // wrangler.toml, serve's to the cwd, and the two must name the same directory.
    const persistTo = path.resolve(values["persist-to"] ?? defaultPersistTo());
    const target = values.remote ? ["--remote"] : ["--local", "--persist-to", persistTo];
    const version = await configVersionId(checked.blob);

    const dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-push-"));
    try {
      // Exactly what was validated, not the file again: it may change meanwhile.
      const blobFile = path.join(dir, "config");
      await writeFile(blobFile, checked.blob);
      // Blob before pointer: a reader must never follow the pointer to a missing blob.
      await kvPut([configBlobKey(version), "--path", blobFile, ...target]);
      await kvPut([CONFIG_POINTER_KEY, version, ...target]);
    } catch (err) {
      process.stderr.write(`switchyard push: ${(err as Error).message}\n`);
      return 1;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const where = values.remote ? "remote KV" : `local KV (${path.relative(process.cwd(), persistTo) || "."})`;
    process.stdout.write(`pushed config version ${version} to ${where}\n`);
    return 0;
  },
};

/** `wrangler kv key put KEY ... --binding CONFIG`; its chatter is shown only on failure. Also the e2e tests' way to write KV as an operator's own wrangler would. */
export async function kvPut(args: string[]): Promise<void> {
  const argv = [WRANGLER_BIN, "kv", "key", "put", ...args, "--binding", "CONFIG", "--config", WRANGLER_TOML];
  const { code, output } = await run(existsSync(PROJECT_NODE) ? PROJECT_NODE : process.execPath, argv);
  if (code !== 0) throw new Error(`wrangler kv key put ${args[0]} failed (exit ${code}):\n${output.trim()}`);
}

function run(cmd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
}
