/** `npm run bench:routewise` command line: usage, defaults (with their reasons) and parsing. */
import { parseArgs } from "node:util";

/** The rows a run can hold, in the order the table shows them. */
export const ROW_NAMES = ["fixed-60-40", "fixed-all", "alpha-0", "alpha-0.25", "alpha-0.5", "alpha-1", "alpha-0.25-hedge"] as const;
export type RowName = (typeof ROW_NAMES)[number];

export interface Options {
  rows: RowName[];
  requests: number;
  concurrency: number;
  seed: number;
  /** Probe requests per route when calibrating a RouteWise row. */
  probes: number;
  /** Length of the quota provider's fixed window, seconds. */
  quotaWindowS: number;
  /** Tokens (prompt + output) the quota provider allows per window. */
  quotaTokens: number;
  /** Parallel slots of the concurrency provider. */
  slots: number;
  quick: boolean;
  out: string | undefined;
}

/**
 * Defaults, sized for a shared 2-core machine (the router, its Durable Objects, four fake
 * providers and the clients all on it) and so that each effect is large:
 * - 300 requests a row from 8 closed-loop clients: 15-40 s of load a row, a few quota
 *   windows, and a p99 that rests on 3 requests (a 10% slow tail is 30 of them);
 * - a 10 s quota window of 6,000 tokens: ~23 of the workload's requests (~265 tokens
 *   each), under what a fixed share of 25% sends in 10 s at the fixed split's ~15 req/s
 *   (~37 requests), so the fixed split runs out before each window ends, and a small
 *   part of what RouteWise would send there if the quota were unlimited;
 * - 2 slots on the concurrency provider against 8 clients: a fixed share of a quarter
 *   sometimes finds both busy;
 * - 10 probes per route: envelope_min_samples (10) for a quota-bearing model.
 */
export const DEFAULTS = { requests: 300, quickRequests: 40, concurrency: 8, seed: 1, probes: 10, quotaWindowS: 10, quotaTokens: 6_000, slots: 2 } as const;

export const USAGE = `Usage: npm run bench:routewise -- [--quick] [--requests N] [--concurrency N] [--rows a,b]
         [--seed N] [--probes N] [--quota-window-s S] [--quota-tokens N] [--slots N] [--out FILE]

Spend and latency of RouteWise (cost-aware provider routing) against fixed-ratio splits
over the same fake metered providers: for every row, fresh providers (seeded), a fresh
router on workerd, the same seeded streamed requests from closed-loop clients; spend from
the providers' own token counts × the prices in the config.

  --quick             ${DEFAULTS.quickRequests} requests per row instead of ${DEFAULTS.requests} (a smoke run)
  --requests N        requests per row (default ${DEFAULTS.requests})
  --concurrency N     closed-loop clients (default ${DEFAULTS.concurrency})
  --rows a,b          default: ${ROW_NAMES.join(",")}
  --seed N            seeds the requests and the providers' slow draws (default ${DEFAULTS.seed})
  --probes N          calibration probes per route for RouteWise rows (default ${DEFAULTS.probes}; also envelope_min_samples)
  --quota-window-s S  the quota provider's fixed window (default ${DEFAULTS.quotaWindowS})
  --quota-tokens N    tokens the quota provider allows per window (default ${DEFAULTS.quotaTokens})
  --slots N           parallel slots of the concurrency provider (default ${DEFAULTS.slots})
  --out FILE          also write the report as markdown (e.g. docs/routewise-bench.md)`;

/** Numeric options: [min, max] of each, all whole numbers. */
const WHOLE = {
  requests: [1, 100_000],
  concurrency: [1, 256],
  seed: [0, 2 ** 31 - 1],
  probes: [1, 100],
  "quota-window-s": [1, 86_400],
  "quota-tokens": [1, 1_000_000_000],
  slots: [1, 64],
} as const;
type WholeOption = keyof typeof WHOLE;

/** Throws with a message naming the option on a bad value. */
export function parseOptions(argv: string[]): Options | "help" {
  const stringOptions = Object.fromEntries([...Object.keys(WHOLE), "rows", "out"].map((name) => [name, { type: "string" as const }]));
  const { values } = parseArgs({ args: argv, strict: true, options: { ...stringOptions, quick: { type: "boolean" }, help: { type: "boolean", short: "h" } } });
  if (values.help === true) return "help";
  const given = values as Record<string, string | undefined>;
  const whole = (name: WholeOption, fallback: number): number => {
    const raw = given[name];
    const [min, max] = WHOLE[name];
    const n = raw === undefined ? fallback : raw.trim() === "" ? Number.NaN : Number(raw);
    if (!(Number.isInteger(n) && n >= min && n <= max)) throw new Error(`--${name}: must be an integer from ${min} to ${max}, got "${raw}"`);
    return n;
  };
  let rows: RowName[] = [...ROW_NAMES];
  if (given.rows !== undefined) {
    const names = given.rows.split(",").map((s) => s.trim()).filter(Boolean);
    const unknown = names.find((n) => !(ROW_NAMES as readonly string[]).includes(n));
    if (names.length === 0 || unknown !== undefined) throw new Error(`--rows: ${unknown === undefined ? "empty" : `unknown "${unknown}"`}; known: ${ROW_NAMES.join(", ")}`);
    rows = ROW_NAMES.filter((n) => names.includes(n)); // report order, once each
  }
  const quick = values.quick === true;
  return {
    rows,
    requests: whole("requests", quick ? DEFAULTS.quickRequests : DEFAULTS.requests),
    concurrency: whole("concurrency", DEFAULTS.concurrency),
    seed: whole("seed", DEFAULTS.seed),
    probes: whole("probes", DEFAULTS.probes),
    quotaWindowS: whole("quota-window-s", DEFAULTS.quotaWindowS),
    quotaTokens: whole("quota-tokens", DEFAULTS.quotaTokens),
    slots: whole("slots", DEFAULTS.slots),
    quick,
    out: given.out,
  };
}

/** The options, or the exit code once usage is printed: 0 for --help, 2 for a bad option. */
export function readOptions(argv: string[]): Options | number {
  let parsed: Options | "help" | Error;
  try {
    parsed = parseOptions(argv);
  } catch (err) {
    parsed = err as Error;
  }
  if (parsed === "help" || parsed instanceof Error) {
    const [stream, text, code] = parsed === "help" ? [process.stdout, USAGE, 0] : [process.stderr, `${parsed.message}\n\n${USAGE}`, 2];
    stream.write(`${text}\n`);
    return code;
  }
  return parsed;
}
