/**
 * Driving a workload through the router and what is measured.
 *
 * Closed loop: `concurrency` clients each take the next conversation from one shared
 * queue and play its turns in order, each turn once the previous answer has streamed to
 * its end. Every policy gets the same conversations in the same queue order; only the
 * interleaving of clients follows the timing.
 */
import http from "node:http";
import { percentile } from "../load";
import { streamChat, type ChatOutcome, type ChatTarget } from "./chat-stream";
import type { Conversation } from "./workloads";

export interface DriveOptions {
  url: string;
  model: string;
  conversations: readonly Conversation[];
  concurrency: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** An outcome, and whether it was its client's first request (the first wave: every client starts at once). */
export type DrivenOutcome = ChatOutcome & { firstOfClient: boolean };

export interface Driven {
  outcomes: DrivenOutcome[];
  /** First request sent to last one finished. */
  elapsedMs: number;
}

export async function drive(o: DriveOptions): Promise<Driven> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency, maxFreeSockets: o.concurrency });
  const target: ChatTarget = { agent, url: new URL(o.url), model: o.model, timeoutMs: o.timeoutMs };
  const outcomes: DrivenOutcome[] = [];
  let next = 0;
  const start = performance.now();
  let last = start;
  const client = async () => {
    let firstOfClient = true;
    while (next < o.conversations.length && !o.signal?.aborted) {
      const conversation = o.conversations[next++]!;
      for (const turn of conversation.turns) {
        if (o.signal?.aborted) return;
        outcomes.push({ ...(await streamChat(target, turn)), firstOfClient });
        firstOfClient = false;
        last = Math.max(last, performance.now());
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: o.concurrency }, client));
  } finally {
    agent.destroy();
  }
  return { outcomes, elapsedMs: last - start };
}

/** Reads each replica's running + waiting every `everyMs` until stopped. */
export function sampleInFlight(read: () => number[], everyMs: number): { stop(): number[][] } {
  const samples: number[][] = [];
  const timer = setInterval(() => samples.push(read()), everyMs);
  return {
    stop() {
      clearInterval(timer);
      return samples;
    },
  };
}

export interface Balance {
  /** Mean over samples of max ÷ mean in-flight across replicas (samples with nothing in flight left out); 1 = even. */
  maxOverMean: number;
  /** Most requests in flight (running + waiting) on one replica in any sample. */
  peak: number;
  /** Samples that had something in flight. */
  samples: number;
}

export function balanceOf(samples: readonly (readonly number[])[]): Balance {
  let sum = 0;
  let counted = 0;
  let peak = 0;
  for (const s of samples) {
    const max = Math.max(0, ...s);
    peak = Math.max(peak, max);
    const mean = s.reduce((a, b) => a + b, 0) / s.length;
    if (!(mean > 0)) continue;
    sum += max / mean;
    counted++;
  }
  return { maxOverMean: counted === 0 ? Number.NaN : sum / counted, peak, samples: counted };
}

export interface CellResult {
  requests: number;
  ok: number;
  errors: number;
  /** Error counts by kind. */
  errorKinds: Record<string, number>;
  /** Σ cached prompt tokens ÷ Σ prompt tokens over successful requests, from their usage. */
  hitRate: number;
  /** The router's expectation of hitRate: its prefix index's expected hit blocks ÷ looked-up blocks (router.ts); absent without an index. */
  expectedHitRate?: number;
  ttftP50: number;
  ttftP99: number;
  /**
   * TTFT p99 over the requests after the first wave (each client's first request left
   * out): all clients start together on empty caches, so the first wave is as many cold
   * prompts at once as there are clients, alike for every policy that spreads them evenly.
   */
  ttftP99AfterFirstWave: number;
  /** Successful requests per second. */
  rps: number;
  balance: Balance;
  /** Successful requests each replica served, by the router's x-switchyard-replica. */
  perReplica: Record<string, number>;
}

export function summarise(driven: Driven, samples: readonly (readonly number[])[]): CellResult {
  const ttfts: number[] = [];
  const afterFirstWave: number[] = [];
  const errorKinds: Record<string, number> = {};
  const perReplica: Record<string, number> = {};
  let cached = 0;
  let prompt = 0;
  for (const o of driven.outcomes) {
    if (!o.ok) {
      errorKinds[o.error] = (errorKinds[o.error] ?? 0) + 1;
      continue;
    }
    ttfts.push(o.ttftMs);
    if (!o.firstOfClient) afterFirstWave.push(o.ttftMs);
    cached += o.cachedTokens;
    prompt += o.promptTokens;
    const r = o.replica ?? "?";
    perReplica[r] = (perReplica[r] ?? 0) + 1;
  }
  const sorted = Float64Array.from(ttfts).sort();
  return {
    requests: driven.outcomes.length,
    ok: ttfts.length,
    errors: driven.outcomes.length - ttfts.length,
    errorKinds,
    hitRate: prompt === 0 ? Number.NaN : cached / prompt,
    ttftP50: percentile(sorted, 50),
    ttftP99: percentile(sorted, 99),
    ttftP99AfterFirstWave: percentile(Float64Array.from(afterFirstWave).sort(), 99),
    rps: driven.elapsedMs > 0 ? ttfts.length / (driven.elapsedMs / 1000) : 0,
    balance: balanceOf(samples),
    perReplica,
  };
}

/**
 * The `n` slowest successful requests by TTFT, one line each: TTFT, when it was sent
 * (ms after the row's first request), its cached and prompt tokens and the replica. What
 * a p99 is made of: on 200 requests it is the third slowest.
 */
export function slowest(driven: Driven, n: number): string[] {
  const ok = driven.outcomes.filter((o): o is Extract<DrivenOutcome, { ok: true }> => o.ok);
  if (ok.length === 0) return [];
  const first = Math.min(...ok.map((o) => o.sentAt));
  return [...ok]
    .sort((a, b) => b.ttftMs - a.ttftMs)
    .slice(0, n)
    .map((o) => `TTFT ${o.ttftMs.toFixed(0)} ms, sent at +${(o.sentAt - first).toFixed(0)} ms, cached ${o.cachedTokens}/${o.promptTokens}, ${o.replica ?? "?"}`);
}
