/**
 * Prefill as one engine's shared compute: processor sharing. Each prefilling request
 * brings `workMs` (what its prefill would take alone, costs.ts); while n requests prefill
 * at once each progresses at 1/n the speed, so n cold prompts admitted together all finish
 * after about n times one's work.
 *
 * Why: prefill is compute-bound. A GPU shares its steps between the prefills it runs
 * (vLLM's chunked prefill packs them into one token budget per step), so a step with
 * twice the prompt tokens takes about twice as long. llm-d's TTFT estimate is the same
 * rule: in-flight uncached tokens ÷ the engine's peak prefill throughput. Modelling
 * prefills as independent made a cache miss cost only the missing request, where on a
 * real engine it also delays every prefill running beside it.
 */
import { now } from "./records";

interface Prefill {
  /** Work left, in ms of the engine alone. */
  left: number;
  done: () => void;
}

const FINISHED_MS = 1e-6; // float dust left by the subtraction: done

export class SharedPrefill {
  private readonly running = new Set<Prefill>();
  private at = now();
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** Resolves once `workMs` of prefill has been served beside the others; rejects with the signal's reason if it aborts first (its share goes to the rest). */
  run(workMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      this.advance();
      const onAbort = () => {
        this.advance();
        this.running.delete(prefill);
        this.reschedule();
        reject(signal.reason);
      };
      const prefill: Prefill = {
        left: Math.max(0, workMs),
        done: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.running.add(prefill);
      this.finishDone();
      this.reschedule();
    });
  }

  /** Serves the time since the last change, shared equally. */
  private advance(): void {
    const t = now();
    const n = this.running.size;
    if (n > 0) for (const p of this.running) p.left -= (t - this.at) / n;
    this.at = t;
  }

  private finishDone(): void {
    for (const p of [...this.running]) {
      if (p.left > FINISHED_MS) continue;
      this.running.delete(p);
      p.done();
    }
  }

  private reschedule(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running.size === 0) return;
    let least = Number.POSITIVE_INFINITY;
    for (const p of this.running) least = Math.min(least, p.left);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.advance();
      // A timer may fire a little early: whatever is now within a millisecond is done.
      for (const p of this.running) if (p.left < 1 / this.running.size) p.left = 0;
      this.finishDone();
      this.reschedule();
    }, least * this.running.size);
  }
}
