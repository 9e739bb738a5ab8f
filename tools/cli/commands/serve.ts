import { existsSync } from "node:fs";
import { parseFlags, parsePort, parseVarFlags, UsageError, type Command } from "../args";
import { checkConfigFile, printWarnings } from "../config-file";
import { readEnvFile } from "../env-file";
import { untilSignal, waitForHttp } from "../lifecycle";
import { startHangupRelay, type HangupRelay } from "../hangup-relay";
import { defaultPersistTo } from "../paths";
import { isPortFree } from "../ports";

const DEFAULT_PORT = 8787; // wrangler dev's port, so existing client setups keep working
const DEFAULT_ENV_FILE = ".dev.vars"; // where wrangler dev reads local secrets from

export const command: Command = {
  usage: `Usage: switchyard serve [--config FILE] [--port N] [--direct] [--persist-to DIR]
                       [--env-file FILE] [--var KEY=VALUE ...]

Runs the router on workerd at http://127.0.0.1:N (default ${DEFAULT_PORT}): a direct socket
to the Worker (no Miniflare entry Worker in front), behind a small relay that lets the
router notice clients that leave early (see --direct). Prints one line containing
"ready" once it answers requests. Ctrl-C (or SIGTERM) stops it.

  --config FILE      validate FILE and publish it to the local KV before starting;
                     without it, the router serves whatever config is published there
                     (see "switchyard push")
  --persist-to DIR   local state directory, shared with wrangler's --persist-to
                     (default .wrangler/state)
  --env-file FILE    KEY=VALUE lines that become Worker vars and secrets, e.g.
                     ADMIN_TOKEN and \${VAR} references (default ${DEFAULT_ENV_FILE} if present)
  --var KEY=VALUE    one more var; repeatable, wins over --env-file
  --direct           serve on workerd's socket itself, without the relay that turns a
                     client's orderly close into a connection reset: one hop less, but
                     a client that leaves before the response headers is then not
                     noticed (workerd does not report an orderly close there)`,

  async run(argv) {
    const { values, positionals } = parseFlags(argv, {
      config: { type: "string" },
      port: { type: "string" },
      "persist-to": { type: "string" },
      "env-file": { type: "string" },
      var: { type: "string", multiple: true },
      direct: { type: "boolean" },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const port = parsePort(values.port, DEFAULT_PORT, true);
    const vars = loadVars(values["env-file"], values.var);
    if (!vars) return 1;

    // The Worker sees exactly these vars, so a `${VAR}` they lack would fail there too:
    // better to say so now than to start a router without a config.
    let configText: string | undefined;
    if (values.config !== undefined) {
      const checked = checkConfigFile(values.config, { vars, unresolvedVars: "error" });
      if (!checked) {
        if (existsSync(values.config)) process.stderr.write("note: serve resolves ${VAR} only from --env-file and --var values\n");
        return 1;
      }
      printWarnings(checked.warnings);
      configText = checked.text;
    }

    if (port !== 0 && !(await isPortFree(port))) {
      process.stderr.write(`switchyard serve: port ${port} is already in use; pick another with --port\n`);
      return 1;
    }
    const { startRouter } = await import("../runtime");
    const relayed = values.direct !== true;
    // Relayed, the Worker's own socket takes any free port and the relay the one asked for.
    const router = await startRouter({ port: relayed ? 0 : port, configText, vars, persistTo: values["persist-to"] ?? defaultPersistTo(), cronEveryMinute: true });
    let relay: HangupRelay | null = null;
    try {
      await waitForHttp(router.url);
      if (relayed) relay = await startHangupRelay({ host: "127.0.0.1", port }, new URL(router.url));
      const config = await servingLine(router.url, await router.configVersion());
      const stopped = untilSignal(); // listening before "ready": a script may signal as soon as it reads it
      process.stdout.write(`switchyard ready on ${relay?.url ?? router.url} (${config})\n`);
      await stopped;
    } finally {
      await relay?.close();
      await router.dispose();
    }
    return 0;
  },
};

/** --env-file (or .dev.vars) then --var; names are reported, values never. */
function loadVars(envFile: string | undefined, varFlags: string[] | undefined): Record<string, string> | null {
  const file = envFile ?? (existsSync(DEFAULT_ENV_FILE) ? DEFAULT_ENV_FILE : undefined);
  let fromFile: Record<string, string> = {};
  if (file !== undefined) {
    try {
      fromFile = readEnvFile(file);
    } catch (err) {
      process.stderr.write(`switchyard serve: cannot read env file ${file}: ${(err as Error).message}\n`);
      return null;
    }
  }
  const fromFlags = parseVarFlags(varFlags);
  const vars = { ...fromFile, ...fromFlags };
  const names = Object.keys(vars);
  if (names.length > 0) {
    const sources = [file !== undefined && Object.keys(fromFile).length > 0 ? file : "", Object.keys(fromFlags).length > 0 ? "--var" : ""];
    process.stderr.write(`worker vars (${sources.filter(Boolean).join(", ")}): ${names.sort().join(", ")}\n`);
  }
  return vars;
}

/**
 * What the ready line says of the config: the version KV names, and whether the Worker
 * serves it (GET /health names the version it serves). A version the Worker refused (say,
 * a `${VAR}` it lacks, pushed while it ran) leaves the last good one serving, or nothing.
 */
async function servingLine(url: string, published: string | null): Promise<string> {
  if (published === null) return "no config published yet; run switchyard push FILE";
  const health = await fetch(`${url}/health`)
    .then(async (res) => (await res.json()) as { config_version?: string })
    .catch(() => null);
  if (health === null || health.config_version === published) return `config ${published}`;
  const serving = health.config_version ? `serving ${health.config_version}` : "serving nothing (503 no_config)";
  return `config ${published} was rejected, ${serving}; GET /routing shows why`;
}
