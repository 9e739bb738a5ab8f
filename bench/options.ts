/** `npm run bench` command line: usage text, parsing and the option defaults. */
import { parseArgs } from "node:util";

export const USAGE = `Usage: tsx bench/run.ts [--duration S] [--warmup S] [--concurrency N] [--rounds N] [--stream]
                       [--do-rtt-ms N] [--no-portkey] [--cold-samples N] [--c1-duration S] [--fresh-workers]

Runs the same closed-loop load against each target, one after another:
  direct        the fake OpenAI upstream itself
  pass-through  a bare Worker on workerd that forwards each request to the upstream
  body-routing  a bare body-routing Worker: reads the body, JSON.parse, checks the model,
                picks one of two upstreams 60/40, forwards the text. The floor the
                router's ratios are stated against
  router        Switchyard on workerd with seed 004's routing.yaml (two replicas 60/40)
                and shared_state: false (weights alone, no Durable Object calls)
  router+state  seed 004's routing.yaml as it is: pins (affinity), leases and circuits
                in Durable Objects
  router+state keyed  the same two replicas in a models:/pools: config, affinity on,
                client keys on (every request sends its Bearer key)
  router+state limits  router+state keyed with a limit of every kind on its key (requests
                and tokens per minute, concurrency, spend), all too high to refuse
  router+state rttN  (with --do-rtt-ms N) router+state with a simulated N ms round trip
                to its Durable Objects (Worker var SWITCHYARD_SIMULATED_DO_RTT_MS)
  portkey       Portkey's AI gateway (@portkey-ai/gateway, a Node server) in front of
                the same upstream; plain JSON only
and prints req/s, p50 and p99 latency per target and their ratios. Then the same
Workers one request at a time (concurrency 1), latency added over body-routing. Every
Worker is served on Miniflare's direct socket (no entry Worker). Then it reports the
router's bundle size and how long a fresh workerd takes to its first answer.

  --duration S      measured seconds per target and round (default 5)
  --warmup S        unmeasured seconds before each measurement (default 1)
  --concurrency N   concurrent requests, each over its own keep-alive connection (default 16)
  --rounds N        1: every target once, in the order above; 2 (default) adds a second round
                    in reverse order so slow drift of the machine hits every target alike;
                    up to 40 (from 3 on, each ratio also gives its rounds' median)
  --stream          "stream": true requests (SSE responses) instead of plain JSON
  --do-rtt-ms N     add the router+state rttN row (milliseconds, e.g. 50)
  --no-portkey      leave out the portkey row
  --cold-samples N  fresh workerd starts per Worker for the time to first response
                    (default 5; 0 skips)
  --c1-duration S   measured seconds per Worker and round of the concurrency-1 table
                    (default 3; 0 skips it; with --concurrency 1 the main table is it)
  --fresh-workers   every Worker row on a new workerd from its second round on: two
                    processes of one Worker differ by about 5% (concurrency 16) to 10%
                    (concurrency 1) for the process's own reasons, which rounds on one
                    process never average out (bench/README.md)`;

export interface Options {
  durationMs: number;
  warmupMs: number;
  concurrency: number;
  rounds: number;
  stream: boolean;
  /** Simulated Durable Object round trip for the extra stateful row; undefined = no such row. */
  doRttMs: number | undefined;
  portkey: boolean;
  coldSamples: number;
  /** Measured ms per target and round at concurrency 1; 0 = no such table. */
  c1DurationMs: number;
  /** Each Worker row on a new workerd from its second round on. */
  freshWorkers: boolean;
}

const MAX_ROUNDS = 40; // short rounds, many of them, are how a ratio is read on a machine whose speed moves (bench/README.md)
const MAX_DO_RTT_MS = 10_000; // well past any real round trip; the per-request timeout is 10 s

/** Throws with a message naming the option on a bad value. */
export function parseOptions(argv: string[]): Options | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowNegative: true,
    options: {
      duration: { type: "string" },
      warmup: { type: "string" },
      concurrency: { type: "string" },
      rounds: { type: "string" },
      stream: { type: "boolean" },
      "do-rtt-ms": { type: "string" },
      portkey: { type: "boolean" },
      "cold-samples": { type: "string" },
      "c1-duration": { type: "string" },
      "fresh-workers": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return "help";
  const num = (name: string, raw: string | undefined, fallback: number, ok: (n: number) => boolean) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n) || !ok(n)) throw new Error(`--${name}: invalid value "${raw}"`);
    return n;
  };
  const rtt = values["do-rtt-ms"];
  return {
    durationMs: num("duration", values.duration, 5, (n) => n > 0 && n <= 600) * 1000,
    warmupMs: num("warmup", values.warmup, 1, (n) => n >= 0 && n <= 600) * 1000,
    concurrency: num("concurrency", values.concurrency, 16, (n) => Number.isInteger(n) && n >= 1 && n <= 1024),
    rounds: num("rounds", values.rounds, 2, (n) => Number.isInteger(n) && n >= 1 && n <= MAX_ROUNDS),
    stream: values.stream ?? false,
    doRttMs: rtt === undefined ? undefined : num("do-rtt-ms", rtt, 0, (n) => n >= 0 && n <= MAX_DO_RTT_MS),
    portkey: values.portkey ?? true,
    coldSamples: num("cold-samples", values["cold-samples"], 5, (n) => Number.isInteger(n) && n >= 0 && n <= 50),
    c1DurationMs: num("c1-duration", values["c1-duration"], 3, (n) => n >= 0 && n <= 600) * 1000,
    freshWorkers: values["fresh-workers"] ?? false,
  };
}
