/**
 * The series behind vllm:lora_requests_info, written the way vLLM writes them.
 *
 * vLLM keeps, per adapter, the ids of its waiting and its running requests
 * (LoRARequestStates in vllm/v1/metrics/stats.py), and after each engine step sets the
 * gauge with labels running_lora_adapters / waiting_lora_adapters (adapter names joined
 * by ",", in the order adapters first appeared) and max_lora to the current time. A
 * prometheus_client gauge keeps every label set it was ever given, each with the last
 * time it was set, so readers (GAIE's extractor) take the series with the newest value.
 * An adapter loaded but with no request in either state appears in neither label.
 */
const SERIES_KEPT = 64; // prometheus_client keeps them all; a bound keeps a long benchmark's /metrics small

export interface LoraSeries {
  running: string;
  waiting: string;
  /** Epoch seconds when this label set was last current. */
  at: number;
}

export class LoraInfo {
  private readonly states = new Map<string, { waiting: number; running: number }>();
  private readonly series = new Map<string, LoraSeries>();

  waiting(name: string): void {
    this.entry(name).waiting++;
  }
  running(name: string): void {
    const e = this.entry(name);
    e.waiting--;
    e.running++;
  }
  /** The request left: `wasRunning` says from which state. */
  left(name: string, wasRunning: boolean): void {
    const e = this.entry(name);
    if (wasRunning) e.running--;
    else e.waiting--;
    if (e.running === 0 && e.waiting === 0) this.states.delete(name);
  }

  /** Marks the current label set as current at `nowMs` (an engine step, in vLLM's terms). */
  record(nowMs: number): void {
    const running = [...this.states].filter(([, e]) => e.running > 0).map(([n]) => n).join(",");
    const waiting = [...this.states].filter(([, e]) => e.waiting > 0).map(([n]) => n).join(",");
    const key = `${running}\u0000${waiting}`;
    const existing = this.series.get(key);
    if (existing) existing.at = nowMs / 1000;
    else this.series.set(key, { running, waiting, at: nowMs / 1000 });
    if (this.series.size > SERIES_KEPT) {
      const stalest = [...this.series].reduce((a, b) => (b[1].at < a[1].at ? b : a));
      this.series.delete(stalest[0]);
    }
  }

  /** Every label set seen, in the order first seen (prometheus_client's output order). */
  all(): LoraSeries[] {
    return [...this.series.values()];
  }

  private entry(name: string) {
    let e = this.states.get(name);
    if (!e) this.states.set(name, (e = { waiting: 0, running: 0 }));
    return e;
  }
}
