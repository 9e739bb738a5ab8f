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
// Forgetting divides the whole covariance by λ every answer, but an answer only shrinks it
// along its own features: a direction the traffic never varies (short prompts at low
// concurrency: uncached blocks and in-flight all but constant) grew by 1/λ an answer and
// overflowed to NaN after ~140k answers, losing every digit of the directions that are
// seen long before. Each coefficient's variance is therefore held at the prior's: an
// unseen direction is as uncertain as at the start, never more.
const MAX_VARIANCE = INITIAL_VARIANCE;
export const TTFT_MAX_MS = 600_000; // the largest objective a request may state (X-SLO-TTFT-Ms); a longer "first token" is a broken clock
const MAX_UNCACHED_BLOCKS = 1_000_000; // far above any prompt the prefix index cuts (256 blocks); larger is a bug upstream
const MAX_INFLIGHT = 1_000_000; // far above any replica's concurrency; larger is a bug upstream

/**
 * Recursive least squares, kept finite: inputs and answers outside their ranges are
 * ignored, each coefficient's variance is clamped at MAX_VARIANCE, and an update that
 * would still produce a non-finite number is dropped and the covariance reset to the
 * prior (the coefficients, finite, are kept). A prediction is only ever a finite number
 * or null ("unknown").
 */
export class TtftModel {
  #theta = [0, 0, 0];
  #p = prior();
  #observations = 0;

  get observations(): number {
    return this.#observations;
  }

  /** The fitted [base ms, ms per uncached block, ms per request in flight]. */
  get coefficients(): readonly number[] {
    return [...this.#theta];
  }

  observe(input: TtftInput, ttftMs: number): void {
    if (!Number.isFinite(ttftMs) || ttftMs < 0 || ttftMs > TTFT_MAX_MS) return;
    const x = features(input);
    if (!x) return;
    const p = this.#p;
    const px = [0, 1, 2].map((i) => p[i]![0]! * x[0]! + p[i]![1]! * x[1]! + p[i]![2]! * x[2]!);
    const denominator = TTFT_FORGETTING + x[0]! * px[0]! + x[1]! * px[1]! + x[2]! * px[2]!;
    const gain = px.map((v) => v / denominator);
    const error = ttftMs - dot(this.#theta, x);
    const theta = this.#theta.map((t, i) => t + gain[i]! * error);
    // P ← (P − k·(xᵀP)) / λ, written so P stays exactly symmetric (xᵀP = (Px)ᵀ): rounding
    // left an antisymmetric part that no answer corrects and 1/λ doubles every ~140 answers.
    const next = clampVariance(p.map((row, i) => row.map((_, j) => ((p[Math.min(i, j)]![Math.max(i, j)]! - (px[i]! * px[j]!) / denominator) / TTFT_FORGETTING))));
    if (!theta.every(Number.isFinite) || !next.every((row, i) => row.every(Number.isFinite) && row[i]! > 0)) {
      this.#p = prior(); // a covariance no longer positive: start its uncertainty over, keep the fit
      return;
    }
    this.#theta = theta;
    this.#p = next;
    this.#observations++;
  }

  /** Predicted TTFT in ms, or null until TTFT_MIN_OBSERVATIONS have been seen, for an input out of range, or were it not finite. Never negative. */
  predict(input: TtftInput): number | null {
    if (this.#observations < TTFT_MIN_OBSERVATIONS) return null;
    const x = features(input);
    if (!x) return null;
    const ms = dot(this.#theta, x);
    return Number.isFinite(ms) ? Math.max(0, ms) : null;
  }
}

function prior(): number[][] {
  return [
    [INITIAL_VARIANCE, 0, 0],
    [0, INITIAL_VARIANCE, 0],
    [0, 0, INITIAL_VARIANCE],
  ];
}

/**
 * D·P·D with D = diag(min(1, √(MAX_VARIANCE / Pᵢᵢ))): scales down only the coefficients
 * whose variance passed the bound, and keeps P symmetric and positive semi-definite.
 */
function clampVariance(p: number[][]): number[][] {
  const d = p.map((row, i) => (row[i]! > MAX_VARIANCE ? Math.sqrt(MAX_VARIANCE / row[i]!) : 1));
  return p.map((row, i) => row.map((v, j) => v * d[i]! * d[j]!));
}

/** The regressors, or null when an input is not a finite number in its range. Negative counts read as 0. */
function features(input: TtftInput): number[] | null {
  const { uncachedBlocks, inflight } = input;
  if (!Number.isFinite(uncachedBlocks) || !Number.isFinite(inflight) || uncachedBlocks > MAX_UNCACHED_BLOCKS || inflight > MAX_INFLIGHT) return null;
  return [1, Math.max(0, uncachedBlocks), Math.max(0, inflight)];
}

function dot(a: readonly number[], b: readonly number[]): number {
  return a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]!;
}
