/**
 * Per-request records, the replica's own view of each request, so a benchmark can
 * compute TTFT and hit rate without trusting the client or the router.
 */
import type { VllmRequestRecord } from "../fake-vllm-types";

export const RECORDS_KEPT = 10_000; // a few benchmark runs; a few MB at most

/** Epoch ms with sub-ms precision: differences between two of these are durations. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export class RecordLog {
  private list: VllmRequestRecord[] = [];
  private nextSeq = 1;
  dropped = 0;

  /** A new record, kept and mutated in place as the request goes on. */
  open(init: Pick<VllmRequestRecord, "model" | "lora" | "stream" | "promptTokens" | "plannedTokens">): VllmRequestRecord {
    const record: VllmRequestRecord = {
      seq: this.nextSeq++,
      ...init,
      cachedTokens: 0,
      uncachedTokens: init.promptTokens,
      completionTokens: 0,
      loraLoaded: false,
      arrivalAt: now(),
      startAt: null,
      firstTokenAt: null,
      endAt: null,
      outcome: "waiting",
    };
    this.list.push(record);
    if (this.list.length > RECORDS_KEPT) {
      this.list.shift();
      this.dropped++;
    }
    return record;
  }

  snapshot(): VllmRequestRecord[] {
    return structuredClone(this.list);
  }

  /** Forgets the records; requests still going on keep updating their (now unlisted) records. */
  clear(): void {
    this.list = [];
    this.dropped = 0;
  }
}
