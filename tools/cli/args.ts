import { parseArgs, type ParseArgsConfig } from "node:util";

/** A command line the user got wrong: main prints the message and usage, exit 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig["options"]>;

/** node:util's parser with its errors turned into UsageError, so main can tell them apart. */
export function parseFlags<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** `--port 8787` → 8787; anything outside 1..65535 is a usage error. */
/** `--port`; with `anyFree`, 0 asks the OS for a free port (the ready line names the one taken). */
export function parsePort(value: string | undefined, fallback: number, anyFree = false): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  const lowest = anyFree ? 0 : 1;
  if (!Number.isInteger(port) || port < lowest || port > 65535) {
    throw new UsageError(`--port must be an integer between ${lowest} and 65535, got "${value}"`);
  }
  return port;
}

/** `--var KEY=VALUE` pairs; later ones win, like repeated shell assignments. */
export function parseVarFlags(pairs: string[] | undefined): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--var expects KEY=VALUE, got "${pair}"`);
    vars[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return vars;
}

/** What each module in tools/cli/commands exports as `command`. */
export interface Command {
  /** Full help text, printed for `switchyard <name> --help` and after usage errors. */
  usage: string;
  /** Resolves to the process exit code. */
  run(argv: string[]): Promise<number>;
}
