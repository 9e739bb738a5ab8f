import { existsSync } from "node:fs";
import { parseFlags, UsageError, type Command } from "../args";
import { readEnvFile } from "../env-file";
import { usageTable, type UsageAnswer } from "../usage-table";

const DEFAULT_URL = "http://127.0.0.1:8787"; // where `switchyard serve` listens by default
const DEFAULT_ENV_FILE = ".dev.vars"; // where `serve` (and wrangler dev) read ADMIN_TOKEN from
const FILTERS = ["key", "team", "model", "tenant", "window"] as const;

export const command: Command = {
  usage: `Usage: switchyard usage [--url URL] [--key NAME] [--team NAME] [--model NAME] [--tenant NAME] [--window WINDOW] [--json]

Shows each limit bucket (docs/limits.md) and what it has left, from the router's
GET /admin/usage: per bucket and dimension the limit, what was spent in the current
window, what isolates hold unspent, what remains and when the window resets.

  --url URL          the router (default ${DEFAULT_URL})
  --key NAME         the buckets that limit key NAME (its own rules, its team's, its models')
  --team NAME        the buckets that limit team NAME
  --model NAME       the buckets that limit model NAME
  --tenant NAME      read per-tenant buckets for end user NAME
  --window WINDOW    only what is counted in WINDOW: minute, hour, day, month, fixed or none
  --json             print the router's answer as it came
  --token TOKEN      the admin token; otherwise ADMIN_TOKEN or SWITCHYARD_ADMIN_TOKEN from
                     the environment, otherwise ADMIN_TOKEN from --env-file
  --env-file FILE    default ${DEFAULT_ENV_FILE} if present

Exit codes: 0 shown, 1 the router refused or could not be reached, 2 usage.`,

  async run(argv) {
    const { values, positionals } = parseFlags(argv, {
      url: { type: "string" },
      token: { type: "string" },
      "env-file": { type: "string" },
      json: { type: "boolean" },
      key: { type: "string" },
      team: { type: "string" },
      model: { type: "string" },
      tenant: { type: "string" },
      window: { type: "string" },
    });
    if (positionals.length > 0) throw new UsageError(`usage takes no positional arguments, got "${positionals[0]}"`);
    const base = values.url ?? DEFAULT_URL;
    let url: URL;
    try {
      url = new URL("/admin/usage", base);
    } catch {
      throw new UsageError(`--url is not a URL: "${base}"`);
    }
    for (const name of FILTERS) {
      const value = values[name];
      if (value !== undefined) url.searchParams.set(name, value);
    }
    const token = adminToken(values.token, values["env-file"]);
    if (!token) throw new UsageError(`no admin token: pass --token, set ADMIN_TOKEN, or put ADMIN_TOKEN in ${values["env-file"] ?? DEFAULT_ENV_FILE}`);

    const fail = (message: string) => {
      process.stderr.write(`switchyard usage: ${message}\n`);
      return 1;
    };
    let response: Response;
    try {
      response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return fail(`cannot reach ${base}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await response.text();
    if (response.status === 401) return fail(`the router at ${base} refused the admin token (401): check --token or ADMIN_TOKEN`);
    if (response.status === 404) return fail(`the router at ${base} has no /admin/usage (404): is it a Switchyard router with limits?`);
    if (response.status === 400) return fail(`the router at ${base} refused the query (400): ${errorMessage(text)}`);
    if (!response.ok) return fail(`the router at ${base} answered ${response.status}: ${text.slice(0, 500)}`);
    if (values.json) {
      process.stdout.write(`${text}\n`);
      return 0;
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      return fail(`the router at ${base} answered something other than JSON: ${text.slice(0, 200)}`);
    }
    if (!isUsageAnswer(answer)) return fail(`the router at ${base} answered JSON that is not a usage report (no "buckets" list): is it a Switchyard router? ${text.slice(0, 200)}`);
    process.stdout.write(usageTable(answer));
    return 0;
  },
};

/** Enough of GET /admin/usage's shape for the table: another server's JSON is not printed as if it were one. */
function isUsageAnswer(value: unknown): value is UsageAnswer {
  if (typeof value !== "object" || value === null) return false;
  const { at, filter, buckets } = value as Record<string, unknown>;
  if (typeof at !== "string" || typeof filter !== "object" || filter === null || !Array.isArray(buckets)) return false;
  return buckets.every((b) => typeof b === "object" && b !== null && typeof (b as { bucket?: unknown }).bucket === "string" && typeof (b as { usage?: unknown }).usage === "object" && (b as { usage?: unknown }).usage !== null);
}

/** An OpenAI-shaped error's message (what the router says was wrong with the query), else the body as it came. */
function errorMessage(text: string): string {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === "string") return message;
  } catch {
    // not JSON: shown as it came
  }
  return text.slice(0, 500);
}

/** --token, then the environment, then the env file serve reads its ADMIN_TOKEN from. */
function adminToken(flag: string | undefined, envFile: string | undefined): string | undefined {
  if (flag) return flag;
  const fromEnv = process.env.ADMIN_TOKEN || process.env.SWITCHYARD_ADMIN_TOKEN;
  if (fromEnv) return fromEnv;
  const file = envFile ?? DEFAULT_ENV_FILE;
  if (envFile === undefined && !existsSync(file)) return undefined;
  try {
    return readEnvFile(file).ADMIN_TOKEN || undefined;
  } catch (err) {
    throw new UsageError(`cannot read --env-file ${file}: ${(err as Error).message}`);
  }
}
