/** `npm run bench:quality` command line: usage, defaults (with their reasons) and parsing. */
import { parseArgs } from "node:util";
import type { MetricsMode } from "../../tools/fakes/fake-vllm";
import type { FleetKnobs } from "./fleet";
import { POLICIES } from "./router";
import { WORKLOAD_NAMES, type WorkloadName, type WorkloadSize } from "./workloads";

/** A workload, or the shared one with half the fleet's /metrics going stale as the load starts. */
export const SCENARIOS = [...WORKLOAD_NAMES, "shared-stale"] as const;
export type Scenario = (typeof SCENARIOS)[number];

export function workloadOf(s: Scenario): WorkloadName {
  return s === "shared-stale" ? "shared" : s;
}

/**
 * Closed-loop clients of a row. The burst runs as many clients as the fleet has running
 * slots (replicas × max_num_seqs: 16 by default, as issue 18 measured on 4 replicas): an
 * even spread then never queues, and every request a policy herds onto one replica waits
 * behind a full batch. The other workloads run `--concurrency`.
 */
export function concurrencyOf(s: Scenario, o: Pick<Options, "concurrency" | "fleet">): number {
  return s === "burst" ? o.fleet.replicas * o.fleet.maxNumSeqs : o.concurrency;
}

export interface Options {
  policies: string[];
  /** Whether --policies named them (else the default list, which may drop a stand-in). */
  policiesNamed: boolean;
  scenarios: Scenario[];
  fleet: FleetKnobs;
  size: WorkloadSize;
  concurrency: number;
  scrapeMs: number;
  staleMetrics: Exclude<MetricsMode, "live">;
  seed: number;
  quick: boolean;
  /** Slowest requests printed per row (0: none). */
  tail: number;
  out: string | undefined;
}

/**
 * Defaults, sized so a shared 2-core machine runs 4 replicas, the router and the load
 * without the machine being what is measured (~40 req/s through the router), and so the
 * effects under test are large:
 * - prefill 0.2 ms a token: a cold 750-token system prompt costs 150 ms of TTFT, a cached
 *   one a few ms, so cache hits show in TTFT well above timer noise;
 * - max_num_seqs 4 and 12 clients for 4 replicas (16 slots): an even spread never
 *   queues, an uneven one does, so balance shows in TTFT p99 and throughput;
 * - 480 KV blocks of 16 tokens (7,680 tokens) a replica: about 6 tenant prompts fit
 *   beside the running requests, not all 12, so a policy that spreads every tenant over
 *   every replica evicts, while one that keeps tenants apart does not;
 * - 16 output tokens at 8 ms, 4 per SSE chunk: a request holds its slot ~0.1 s past its
 *   first token, with 5 chunks through the router rather than 16.
 */
const DEFAULT_FLEET: FleetKnobs = {
  replicas: 4,
  blockSize: 16,
  numGpuBlocks: 480,
  maxNumSeqs: 4,
  prefillMsPerToken: 0.2,
  decodeMsPerToken: 8,
  decodeMsPerExtraSeq: 0.5,
  streamTokensPerChunk: 4,
};
const DEFAULT_SIZE: WorkloadSize = { requests: 200, tenants: 12, systemChars: 3000, questionChars: 200, turnsPerSession: 6, outputTokens: 16 };
const QUICK_REQUESTS = 60;
const DEFAULT_CONCURRENCY = 12;
const SCRAPE_MS = 250; // the schema's minimum: the freshest metrics the router can have

export const USAGE = `Usage: npm run bench:quality -- [--quick] [--requests N] [--concurrency N] [--replicas N]
         [--policies a,b] [--workloads a,b] [--stale-metrics failing|frozen] [--seed N]
         [--max-num-seqs N] [--num-gpu-blocks N] [--prefill-ms-per-token MS]
         [--decode-ms-per-token MS] [--output-tokens N] [--tenants N] [--system-chars N]
         [--tail N] [--out FILE]

Routing quality of replica-picking policies: for every workload and policy, a fresh fleet
of fake vLLM replicas (tools/fakes/fake-vllm.ts, empty caches) behind a fresh router on
workerd, the same seeded requests from ${DEFAULT_CONCURRENCY} closed-loop clients, streamed; then prefix-cache
hit rate, TTFT p50/p99, throughput and in-flight balance per row, and the oracle hit rate.

  --quick                   ${QUICK_REQUESTS} requests per row instead of ${DEFAULT_SIZE.requests} (about a minute with 3 policies)
  --requests N              requests per row (default ${DEFAULT_SIZE.requests})
  --concurrency N           closed-loop clients (default ${DEFAULT_CONCURRENCY}); burst runs replicas × max_num_seqs
  --replicas N              fake replicas (default ${DEFAULT_FLEET.replicas})
  --policies a,b            default: ${POLICIES.join(",")}
                            (names the router does not know are skipped with a message; weighted,
                            uniform random here, runs only while the router does not know random)
  --workloads a,b           default: ${SCENARIOS.join(",")}
  --stale-metrics MODE      what half the fleet's /metrics does in shared-stale: failing (503,
                            default) or frozen (keeps answering its idle numbers)
  --seed N                  seeds the workloads (default 1)
  --max-num-seqs N          running requests per replica (default ${DEFAULT_FLEET.maxNumSeqs})
  --num-gpu-blocks N        KV blocks per replica, ${DEFAULT_FLEET.blockSize} tokens each (default ${DEFAULT_FLEET.numGpuBlocks})
  --prefill-ms-per-token MS prefill cost of an uncached prompt token (default ${DEFAULT_FLEET.prefillMsPerToken})
  --decode-ms-per-token MS  cost of each later output token (default ${DEFAULT_FLEET.decodeMsPerToken})
  --output-tokens N         max_tokens of every request (default ${DEFAULT_SIZE.outputTokens})
  --tenants N               tenants of shared and hot (default ${DEFAULT_SIZE.tenants})
  --system-chars N          characters of a tenant's system prompt (default ${DEFAULT_SIZE.systemChars})
  --tail N                  print each row's N slowest requests (TTFT, when sent, cached
                            tokens, replica) to stderr: what its TTFT p99 is made of
  --out FILE                also write the report as markdown (e.g. docs/routing-quality.md)`;

/** Throws with a message naming the option on a bad value. */
export function parseOptions(argv: string[]): Options | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      quick: { type: "boolean" },
      requests: { type: "string" },
      concurrency: { type: "string" },
      replicas: { type: "string" },
      policies: { type: "string" },
      workloads: { type: "string" },
      "stale-metrics": { type: "string" },
      seed: { type: "string" },
      "max-num-seqs": { type: "string" },
      "num-gpu-blocks": { type: "string" },
      "prefill-ms-per-token": { type: "string" },
      "decode-ms-per-token": { type: "string" },
      "output-tokens": { type: "string" },
      tenants: { type: "string" },
      "system-chars": { type: "string" },
      tail: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return "help";
  const v = values as Record<string, string | undefined>;
  const int = (name: string, fallback: number, min: number, max: number) => {
    const raw = v[name];
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: must be an integer from ${min} to ${max}, got "${raw}"`);
    return n;
  };
  const ms = (name: string, fallback: number) => {
    const raw = v[name];
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n) || n < 0 || n > 1000) throw new Error(`--${name}: must be a number from 0 to 1000, got "${raw}"`);
    return n;
  };
  const list = <T extends string>(name: string, known: readonly T[], fallback: readonly T[], strictNames: boolean): T[] => {
    const raw = v[name];
    if (raw === undefined) return [...fallback];
    const names = raw.split(",").map((s) => s.trim()).filter(Boolean);
    const unknown = strictNames ? names.find((n) => !known.includes(n as T)) : undefined;
    if (names.length === 0 || unknown !== undefined) throw new Error(`--${name}: ${unknown === undefined ? "empty" : `unknown "${unknown}"`}; known: ${known.join(", ")}`);
    return [...new Set(names)] as T[];
  };
  const stale = v["stale-metrics"] ?? "failing";
  if (stale !== "failing" && stale !== "frozen") throw new Error(`--stale-metrics: failing or frozen, got "${stale}"`);
  const quick = values.quick === true;
  const size: WorkloadSize = {
    ...DEFAULT_SIZE,
    requests: int("requests", quick ? QUICK_REQUESTS : DEFAULT_SIZE.requests, 1, 100_000),
    tenants: int("tenants", DEFAULT_SIZE.tenants, 2, 1000),
    systemChars: int("system-chars", DEFAULT_SIZE.systemChars, 1, 100_000),
    outputTokens: int("output-tokens", DEFAULT_SIZE.outputTokens, 1, 4096),
  };
  return {
    // Any policy name may be asked for: the router decides which it knows.
    policies: list<string>("policies", POLICIES, POLICIES, false),
    policiesNamed: v.policies !== undefined,
    scenarios: list("workloads", SCENARIOS, SCENARIOS, true),
    fleet: {
      ...DEFAULT_FLEET,
      replicas: int("replicas", DEFAULT_FLEET.replicas, 1, 64),
      maxNumSeqs: int("max-num-seqs", DEFAULT_FLEET.maxNumSeqs, 1, 1024),
      numGpuBlocks: int("num-gpu-blocks", DEFAULT_FLEET.numGpuBlocks, 1, 10_000_000),
      prefillMsPerToken: ms("prefill-ms-per-token", DEFAULT_FLEET.prefillMsPerToken),
      decodeMsPerToken: ms("decode-ms-per-token", DEFAULT_FLEET.decodeMsPerToken),
    },
    size,
    concurrency: int("concurrency", DEFAULT_CONCURRENCY, 1, 1024),
    scrapeMs: SCRAPE_MS,
    staleMetrics: stale,
    seed: int("seed", 1, 0, 2 ** 31 - 1),
    quick,
    tail: int("tail", 0, 0, 1000),
    out: v.out,
  };
}
