/**
 * A pool's time-to-first-token predictor, learned from what the router observes: each
 * streamed answer's first chunk, against what was known when its replica was picked.
 *
 *   TTFT ≈ base + perBlock × uncached blocks + perRequest × requests already in flight
 *
 * The two terms are the endpoint picker's latency predictor reduced to what a router
 * knows without the engine's help: prefill of the prompt's uncached part (the prefix
 * index's guess) and queueing behind the replica's other requests (the router's own
 * leases, fresh in every isolate). Fitted by recursive least squares with forgetting, so
 * old observations fade as the fleet's load and models change; one model per pool per
 * isolate (replicas of a pool are assumed alike, so each observation teaches about all).
 */

export interface TtftInput {
  /** Prompt blocks the replica is not believed to hold. */
  uncachedBlocks: number;
  /** Requests in flight on the replica when it was picked (this one excluded). */
  inflight: number;
}

export const TTFT_FORGETTING = 0.995; // an observation's weight halves after ~140 newer ones: minutes at a few req/s
export const TTFT_MIN_OBSERVATIONS = 20; // below this the fit is a guess: predictions are withheld
const INITIAL_VARIANCE = 1e4; // vague prior on each coefficient (ms per unit), so the first observations dominate

export class TtftModel {
  #theta = [0, 0, 0];
  #p = [
    [INITIAL_VARIANCE, 0, 0],
    [0, INITIAL_VARIANCE, 0],
    [0, 0, INITIAL_VARIANCE],
  ];
  #observations = 0;

  get observations(): number {
    return this.#observations;
  }

  /** The fitted [base ms, ms per uncached block, ms per request in flight]. */
  get coefficients(): readonly number[] {
    return [...this.#theta];
  }

  observe(input: TtftInput, ttftMs: number): void {
    if (!Number.isFinite(ttftMs) || ttftMs < 0) return;
    const x = features(input);
    const p = this.#p;
    const px = [0, 1, 2].map((i) => p[i]![0]! * x[0]! + p[i]![1]! * x[1]! + p[i]![2]! * x[2]!);
    const denominator = TTFT_FORGETTING + x[0]! * px[0]! + x[1]! * px[1]! + x[2]! * px[2]!;
    const gain = px.map((v) => v / denominator);
    const error = ttftMs - dot(this.#theta, x);
    this.#theta = this.#theta.map((t, i) => t + gain[i]! * error);
    // P ← (P − k·(xᵀP)) / λ; P stays symmetric, so xᵀP = (Px)ᵀ.
    this.#p = p.map((row, i) => row.map((v, j) => (v - gain[i]! * px[j]!) / TTFT_FORGETTING));
    this.#observations++;
  }

  /** Predicted TTFT in ms, or null until TTFT_MIN_OBSERVATIONS have been seen. Never negative. */
  predict(input: TtftInput): number | null {
    if (this.#observations < TTFT_MIN_OBSERVATIONS) return null;
    return Math.max(0, dot(this.#theta, features(input)));
  }
}

function features(input: TtftInput): number[] {
  return [1, Math.max(0, input.uncachedBlocks), Math.max(0, input.inflight)];
}

function dot(a: readonly number[], b: readonly number[]): number {
  return a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]!;
}
