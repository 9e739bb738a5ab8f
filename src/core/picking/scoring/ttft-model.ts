/**
 * A pool's time-to-first-token predictor, learned from what the router observes: each
 * streamed answer's first chunk, against what was known when its replica was picked.
 *
 *   TTFT ≈ base + perBlock × uncached blocks + perRequest × requests already in flight
 *               + perQueued × requests ahead of it in the engine's waiting queue
 *
 * The terms are the endpoint picker's latency predictor reduced to what a router knows:
 * prefill of the prompt's uncached part (the prefix index's guess), the batch it joins
 * (the router's own leases, fresh in every isolate) and, past the engine's running slots,
 * the queue it waits in. That last term is the knee: below saturation a request starts at
 * once and in-flight costs little (a bigger batch decodes a little slower); once every
 * running slot is taken, each request ahead waits for a whole answer to finish, which a
 * line fitted through the unsaturated answers cannot see. Fitted by recursive least
 * squares with forgetting, so old observations fade as the fleet's load and models
 * change; one model per pool per isolate (replicas of a pool are assumed alike, so each
 * observation teaches about all).
 *
 * Predictions are monotone in load (a negative fitted load coefficient, which noise can
 * give, counts as 0: more requests ahead never make the first token sooner), never
 * negative, and never above TTFT_MAX_MS.
 */

export interface TtftInput {
  /** Prompt blocks the replica is not believed to hold. */
  uncachedBlocks: number;
  /** Requests in flight on the replica when it was picked (this one excluded). */
  inflight: number;
  /**
   * Requests that would wait ahead of this one in the engine's queue (0 when a running slot
   * is free): past the replica's running slots, `inflight + 1 − slots`; the slots unknown,
   * the engine's own fresh `num_requests_waiting` (queueingAhead). Absent: 0.
   */
  queued?: number;
}

/**
 * Requests ahead of a new one in a replica's waiting queue. `slots` is the engine's
 * max_num_seqs as far as the router knows it (engine-slots.ts), null when unknown; then
 * the engine's fresh waiting count stands in (null: unknown, read as none waiting).
 * Known slots win over that count: the router's in-flight is exact for its own requests
 * while the scrape is up to ~0.75 s old.
 */
export function queueingAhead(inflight: number, slots: number | null, engineWaiting: number | null): number {
  // The router's count is exact for its own requests; the engine's waiting is a scrape behind.
  if (slots !== null && slots > 0) return Math.max(0, inflight + 1 - slots);
  return engineWaiting ?? 0;
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
  #theta = [0, 0, 0, 0];
  #p = prior();
  #observations = 0;

  get observations(): number {
    return this.#observations;
  }

  /** The fitted [base ms, ms per uncached block, ms per request in flight, ms per request queued ahead]. */
  get coefficients(): readonly number[] {
    return [...this.#theta];
  }

  observe(input: TtftInput, ttftMs: number): void {
    if (!Number.isFinite(ttftMs) || ttftMs < 0 || ttftMs > TTFT_MAX_MS) return;
    const x = features(input);
    if (!x) return;
    const p = this.#p;
    const px = p.map((row) => dot(row, x));
    const denominator = TTFT_FORGETTING + dot(x, px);
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

  /**
   * Predicted TTFT in ms, or null until TTFT_MIN_OBSERVATIONS have been seen, for an input
   * out of range, or were it not finite. In [0, TTFT_MAX_MS], and never lower for more
   * load: the load coefficients count at least 0.
   */
  predict(input: TtftInput): number | null {
    if (this.#observations < TTFT_MIN_OBSERVATIONS) return null;
    const x = features(input);
    if (!x) return null;
    const [base, perBlock, perRequest, perQueued] = this.#theta as [number, number, number, number];
    const ms = dot([base, perBlock, Math.max(0, perRequest), Math.max(0, perQueued)], x);
    return Number.isFinite(ms) ? Math.min(TTFT_MAX_MS, Math.max(0, ms)) : null;
  }
}

const FEATURES = 4;

function prior(): number[][] {
  return Array.from({ length: FEATURES }, (_, i) => Array.from({ length: FEATURES }, (_, j) => (i === j ? INITIAL_VARIANCE : 0)));
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
  const queued = input.queued ?? 0;
  const inRange = (v: number, max: number) => Number.isFinite(v) && v <= max;
  if (!inRange(uncachedBlocks, MAX_UNCACHED_BLOCKS) || !inRange(inflight, MAX_INFLIGHT) || !inRange(queued, MAX_INFLIGHT)) return null;
  return [1, Math.max(0, uncachedBlocks), Math.max(0, inflight), Math.max(0, queued)];
}

function dot(a: readonly number[], b: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
