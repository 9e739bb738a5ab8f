/** The routing-quality bench's markdown: one table per workload, and the doc around them. */
import type { CellResult } from "./measure";
import type { Options, Scenario } from "./options";

export interface Row {
  policy: string;
  result: CellResult;
  note?: string;
}

export interface Section {
  scenario: Scenario;
  about: string;
  oracleHitRate: number;
  rows: Row[];
}

const HEADER = ["policy", "hit rate", "router expected", "TTFT p50 ms", "TTFT p99 ms", "p99 after first wave ms", "req/s", "in-flight max/mean", "peak in-flight", "errors", "requests per replica"];

export const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : "–");
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : "–");

export function table(section: Section): string[] {
  const lines = [`| ${HEADER.join(" | ")} |`, `|${HEADER.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`];
  for (const row of section.rows) {
    const r = row.result;
    const errors = r.errors === 0 ? "0" : `${r.errors} (${Object.entries(r.errorKinds).map(([k, n]) => `${n} ${k}`).join(", ")})`;
    const split = Object.entries(r.perReplica)
      .sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))
      .map(([, n]) => n)
      .join("/");
    lines.push(
      `| ${row.policy}${row.note ? ` (${row.note})` : ""} | ${pct(r.hitRate)} | ${r.expectedHitRate === undefined ? "-" : pct(r.expectedHitRate)} | ${ms(r.ttftP50)} | ${ms(r.ttftP99)} | ${ms(r.ttftP99AfterFirstWave)} | ${r.rps.toFixed(1)} | ` +
        `${Number.isFinite(r.balance.maxOverMean) ? r.balance.maxOverMean.toFixed(2) : "–"} | ${r.balance.peak} | ${errors} | ${split} |`,
    );
  }
  lines.push(`| oracle (one unbounded cache) | ${pct(section.oracleHitRate)} |${" |".repeat(HEADER.length - 2)}`);
  return lines;
}

export function sectionText(section: Section): string[] {
  return [`### ${section.scenario}: ${section.about}`, "", ...table(section)];
}

export interface RunInfo {
  command: string;
  date: string;
  nproc: number;
  node: string;
  loadAverage: string;
  seconds: number;
  skipped: { policy: string; reason: string }[];
}

export function knobLines(o: Options): string[] {
  const f = o.fleet;
  const s = o.size;
  return [
    `- fleet: ${f.replicas} fake vLLM replicas (tools/fakes/fake-vllm.ts) in the bench's Node process; each max_num_seqs ${f.maxNumSeqs}, ${f.numGpuBlocks} KV blocks of ${f.blockSize} tokens, ` +
      `prefill ${f.prefillMsPerToken} ms per uncached token (prefills running at once share the replica), decode ${f.decodeMsPerToken} ms per token (+${f.decodeMsPerExtraSeq} per other running request), ${f.streamTokensPerChunk} tokens per SSE chunk`,
    `- router: src/index.ts on workerd (tools/cli/runtime.ts startRouter), one pool, metrics scrape_ms ${o.scrapeMs}, routing.affinity off, shared state on; a fresh router and fleet for every row`,
    `- load: ${o.concurrency} closed-loop clients (burst: ${f.replicas * f.maxNumSeqs}, the fleet's running slots), ${s.requests} streamed chat requests per row (max_tokens ${s.outputTokens}), seed ${o.seed}; ` +
      `load starts once the router has scraped every replica's /metrics 3 times`,
    `- workloads: ${s.tenants} tenants with ${s.systemChars}-char system prompts, ~${s.questionChars}-char questions, ${s.turnsPerSession}-turn sessions; ` +
      `shared-stale: half the replicas' /metrics turn ${o.staleMetrics} as the load starts`,
  ];
}

export const COLUMNS = [
  "- **hit rate**: Σ cached prompt tokens ÷ Σ prompt tokens over the row's successful requests, from each answer's `usage.prompt_tokens_details.cached_tokens`.",
  "- **router expected**: the hit rate the router's prefix index predicted for the requests it routed, on the replica each went to: Σ leading blocks the index said that replica held ÷ Σ blocks looked up, read from `/routing` (`prefix_index`) at the end of the row. Its blocks are the router's 64 characters of its own rendering of the chat, against the engine's 16 tokens of its template, so the two rates differ by a block or so a request even when the index is exact. `-`: the policy reads no prompts, so the router keeps no index.",
  "- **TTFT p50 / p99**: client-side time from sending a request to the first SSE chunk with content, through the router (nearest-rank percentiles; on 200 requests p99 is the third slowest).",
  "- **p99 after first wave**: TTFT p99 with each client's first request left out. All clients start at once on empty caches, so the first wave is as many cold prompts at once as there are clients, and its third slowest is a floor under the row's p99, about the same for every policy that spreads it evenly (bench/quality/README.md). In burst the first wave is the point: read p99.",
  "- **req/s**: successful requests ÷ time from the first request sent to the last one finished; with a fixed number of clients, a faster policy finishes sooner.",
  "- **in-flight max/mean**: every 50 ms, each replica's running + waiting requests; per sample the busiest replica's count ÷ the fleet mean (samples with nothing in flight left out), averaged. 1.00 is an even spread; N replicas all on one gives N.",
  "- **peak in-flight**: the most requests (running + waiting) on one replica in any sample.",
  "- **errors**: requests that failed: a non-200 answer, a stream without `[DONE]`, content or usage, or no answer within 30 s; they count in no other column.",
  "- **requests per replica**: successful requests each replica served (the router's `x-switchyard-replica`), r0 first.",
  "- **oracle**: the hit rate of one cache of unlimited size seeing the same requests in order (bench/quality/oracle.ts): the ceiling for any placement.",
];

/** Skipped policies grouped by the router's reason (usually one: the list of names it knows). */
export function skippedLines(skipped: readonly { policy: string; reason: string }[]): string[] {
  const byReason = new Map<string, string[]>();
  for (const s of skipped) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s.policy]);
  return [...byReason].map(([reason, policies]) => `skipped, the router does not know them: ${policies.join(", ")} (${reason})`);
}

export const METHOD = [
  "- **Arrival process: closed loop.** Each client takes the next conversation from one shared queue and sends its turns one after another, each once the previous answer has streamed to its end. A multi-turn session's next turn can only follow its answer, which a closed loop gives for free; and the offered load stays bounded, so on a shared 2-core machine every row sees the same pressure and a better policy shows as more req/s (and lower TTFT) instead of as a backlog that grows with the machine's slowness. The cost: a slow policy is offered less load (no coordinated-omission correction), so compare TTFT together with req/s.",
  "- **Same requests for every row.** The workloads are generated from the seed, and every row starts from a fresh fleet (empty KV caches) and a fresh router (empty Durable Object state). Only the interleaving of the clients follows the timing.",
  "- **Stickiness of least-loaded under a closed loop.** A client's finished request frees a slot on its replica, which then tends to be the least loaded one for that client's next request; multi-turn hit rates of least_loaded above power_of_two come from this, not from any cache awareness (checked once with the default knobs: 73% of turns went to the previous turn's replica under least_loaded, 38% under power_of_two, 25% would be chance).",
  "- **weighted**, the router's default policy, is not in the default list: with the equal weights used here it is `random`.",
  "- **TTFT is bimodal** here: a prompt whose prefix is cached answers in a few ms, an uncached one pays ~0.2 ms per token of prefill. With hit rates near 50%, p50 can fall on either side; read it with the hit rate.",
  "- The machine is shared: the fleet and the clients share the bench's Node process, the router runs in workerd, and other work on the host moves absolute numbers by tens of percent between runs. Compare rows of one run.",
];

export function doc(info: RunInfo, o: Options, sections: Section[]): string {
  return [
    "# Routing quality",
    "",
    "Replica-picking policies compared on the same requests, behind the real router, against fake vLLM replicas with a prefix KV cache (issue 9, item 7). Produced by `npm run bench:quality`; see bench/quality/.",
    "",
    "```",
    info.command,
    "```",
    "",
    `- date: ${info.date}; machine: nproc ${info.nproc}, Node ${info.node}, load average ${info.loadAverage} at the start; run time ${Math.round(info.seconds)} s`,
    ...knobLines(o),
    ...skippedLines(info.skipped).map((l) => `- ${l}`),
    "",
    "## Columns",
    "",
    ...COLUMNS,
    "",
    "## Method",
    "",
    ...METHOD,
    "",
    "## Results",
    "",
    ...sections.flatMap((s) => [...sectionText(s), ""]),
  ].join("\n");
}
