/**
 * The replica's scheduler: a FIFO waiting queue, at most maxNumSeqs running, and each
 * running request timed by the cost model (costs.ts) from admission to its last token.
 *
 * Admission follows vLLM v1's FCFS scheduler: walk the waiting queue in order; stop at
 * the first request whose blocks do not fit (the head blocks the rest), but skip one
 * whose adapter has no slot and try the next. The prefix cache is looked up at
 * admission, not arrival, so a request can reuse blocks computed while it waited.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { VllmRequestRecord } from "../fake-vllm-types";
import { decodeMs, prefillMs } from "./costs";
import { PrefixKvCache, type KvLease } from "./kv-cache";
import { SharedPrefill } from "./prefill";
import { LoraInfo } from "./lora-info";
import { LoraSlots } from "./lora-slots";
import type { VllmConfig } from "./options";
import { now } from "./records";
import type { PromptTokens } from "./tokens";

/** A batch of output tokens: indices [from, from + count). */
export interface TokenBatch {
  from: number;
  count: number;
}

interface Job {
  record: VllmRequestRecord;
  prompt: PromptTokens;
  lora: string | null;
  admit: () => void;
  lease?: KvLease;
  readyAt?: number;
}

export class Engine {
  readonly cache: PrefixKvCache;
  readonly lora: LoraSlots;
  readonly loraInfo = new LoraInfo();
  private waitingJobs: Job[] = [];
  private readonly runningJobs = new Set<Job>();
  /** Running requests' prefills share the engine's compute (prefill.ts). */
  private readonly prefills = new SharedPrefill();
  /** Counters behind the vllm:*_total metrics (tokens). */
  /** Token counters, and the inter-token latency histogram's sum (s) and count (tokens after each request's first). */
  readonly totals = { queried: 0, hits: 0, prompt: 0, generation: 0, itlSeconds: 0, itlTokens: 0 };
  readonly startedAt = now();

  constructor(readonly config: VllmConfig) {
    this.cache = new PrefixKvCache(config.numGpuBlocks);
    this.lora = new LoraSlots(config.maxLora);
  }

  get running(): number {
    return this.runningJobs.size;
  }
  get waiting(): number {
    return this.waitingJobs.length;
  }

  /** Blocks a request holds at its end; more than the cache has means it can never run. */
  blocksNeeded(promptTokens: number, outputTokens: number): number {
    return Math.ceil((promptTokens + outputTokens) / this.config.blockSize);
  }

  /**
   * Runs one request: waits in the queue, prefills (sharing the engine with the other
   * prefills), then yields its output tokens in
   * batches of streamTokensPerChunk, each when its cost has elapsed. Aborting `signal`
   * ends it wherever it is and frees its slot, blocks and adapter at once.
   */
  async *generate(record: VllmRequestRecord, prompt: PromptTokens, lora: string | null, signal: AbortSignal): AsyncGenerator<TokenBatch> {
    let admitted!: () => void;
    const admission = new Promise<void>((resolve) => (admitted = resolve));
    const job: Job = { record, prompt, lora, admit: admitted };
    this.waitingJobs.push(job);
    if (lora) this.loraInfo.waiting(lora);
    try {
      this.schedule();
      await untilAborted(admission, signal);

      const c = this.config;
      const loraWait = Math.max(0, (job.readyAt ?? 0) - now());
      if (loraWait > 0) await sleep(loraWait, undefined, { signal });
      await this.prefills.run(prefillMs(c, record.uncachedTokens), signal);
      this.cache.commit(job.lease!);
      record.firstTokenAt = now();
      yield* this.emit(job, 0, 1);

      for (let done = 1; done < record.plannedTokens; ) {
        const count = Math.min(c.streamTokensPerChunk, record.plannedTokens - done);
        const decodeStart = now();
        await sleep(decodeMs(c, count, this.running), undefined, { signal });
        this.totals.itlSeconds += (now() - decodeStart) / 1000;
        this.totals.itlTokens += count;
        const needed = Math.ceil((prompt.tokens + done + count) / c.blockSize);
        this.cache.grow(job.lease!, needed - this.heldBlocks(job));
        yield* this.emit(job, done, count);
        done += count;
      }
      record.outcome = "completed";
    } finally {
      this.leave(job);
    }
  }

  private *emit(job: Job, from: number, count: number): Generator<TokenBatch> {
    job.record.completionTokens = from + count;
    this.totals.generation += count;
    yield { from, count };
  }

  private heldBlocks(job: Job): number {
    const lease = job.lease!;
    return lease.held.length + lease.anonymous;
  }

  private schedule(): void {
    const c = this.config;
    for (let i = 0; i < this.waitingJobs.length && this.runningJobs.size < c.maxNumSeqs; ) {
      const job = this.waitingJobs[i]!;
      if (job.lora !== null && !this.lora.canStart(job.lora)) {
        i++; // vLLM skips a request whose adapter cannot get a slot and tries the next
        continue;
      }
      const { tokens, blockKeys } = job.prompt;
      // vLLM always computes the last prompt token (its logits give the first output
      // token), so a fully cached prompt still gives up its last block.
      const hits = Math.min(this.cache.match(blockKeys), Math.floor((tokens - 1) / c.blockSize));
      const lease = this.cache.admit(blockKeys, hits, Math.ceil(tokens / c.blockSize), this.blocksNeeded(tokens, job.record.plannedTokens));
      if (!lease) break; // FCFS: the head waits for blocks, and everyone behind it waits too
      this.waitingJobs.splice(i, 1);
      this.runningJobs.add(job);
      job.lease = lease;
      this.start(job, hits * c.blockSize);
    }
    this.loraInfo.record(now());
  }

  private start(job: Job, cachedTokens: number): void {
    const r = job.record;
    r.startAt = now();
    r.outcome = "running";
    r.cachedTokens = cachedTokens;
    r.uncachedTokens = r.promptTokens - cachedTokens;
    this.totals.queried += r.promptTokens;
    this.totals.hits += cachedTokens;
    this.totals.prompt += r.promptTokens;
    if (job.lora !== null) {
      const { readyAt, loaded } = this.lora.start(job.lora, r.startAt, this.config.loraLoadMs);
      job.readyAt = readyAt;
      r.loraLoaded = loaded;
      this.loraInfo.running(job.lora);
    }
    job.admit();
  }

  private leave(job: Job): void {
    const r = job.record;
    const wasRunning = this.runningJobs.delete(job);
    if (wasRunning) {
      this.cache.release(job.lease!);
      if (job.lora !== null) this.lora.finish(job.lora);
    } else {
      this.waitingJobs = this.waitingJobs.filter((j) => j !== job);
    }
    if (job.lora !== null) this.loraInfo.left(job.lora, wasRunning);
    r.endAt = now();
    if (r.outcome !== "completed") r.outcome = "aborted";
    this.schedule();
  }
}

/** `promise`, or the signal's reason once it aborts: a waiting request whose client left. */
function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}
