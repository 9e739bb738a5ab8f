import type { RandomSource } from "../../lib/random";
import { uniformFloat, uniformInt } from "../../lib/random";

/**
 * Multi-armed-bandit routers with Seldon Core v1 semantics (EpsilonGreedy,
 * ThompsonSampling, RANDOM_ABTEST), minus Seldon's bugs:
 *
 * - `best_branch: 0` is honoured (Seldon tests it for truthiness, so 0 means "random").
 * - `seed: 0` is honoured (same truthiness bug).
 * - Rewards count exactly: `successes += reward * rows`, fractional. Seldon adds
 *   `int(reward * rows)`, so a reward of 0.9 on a one-row request counts as a failure.
 * - A reward is a success rate, in [0, 1] (Seldon's routers count `int(reward * rows)`
 *   successes and the rest of the rows as failures, so anything outside is meaningless);
 *   rows are a whole number in [1, MAX_FEEDBACK_ROWS]. Anything else is refused, so one
 *   feedback call can never outweigh the history by more than MAX_FEEDBACK_ROWS tries.
 * - An empty feedback request counts as one observation (the caller passes rows = 1;
 *   see `seldonRows`), where Seldon adds nothing or divides by zero.
 * - Epsilon-greedy with one branch always answers 0 (Seldon raises IndexError when it
 *   explores with nothing to explore).
 * - Thompson sampling takes a configurable Beta prior (Seldon: Beta(1, 1) fixed).
 *
 * Pure: the caller injects randomness and owns the state (a Durable Object in
 * production, see src/platform/objects/bandit-state.ts). No function mutates its inputs.
 */

export interface EpsilonGreedyParams {
  kind: "epsilon_greedy";
  n_branches: number;
  /** Probability of exploring: the best arm is routed with probability exactly 1 - epsilon. */
  epsilon: number;
  /** The initial best arm; only read when the state is created. Absent/null: random. */
  best_branch?: number | null;
  /** Makes the node's choices reproducible (see `seededRandom`). Absent/null: Web Crypto. */
  seed?: number | null;
  branch_names?: string[];
}

export interface ThompsonParams {
  kind: "thompson_sampling";
  n_branches: number;
  seed?: number | null;
  branch_names?: string[];
  /** Beta prior of every arm's success rate. Default Beta(1, 1), uniform, as in Seldon. */
  prior?: { alpha: number; beta: number };
}

export type BanditParams = EpsilonGreedyParams | ThompsonParams;

/** `successes` may be fractional: a reward of 0.9 on one row adds 0.9. */
export interface ArmStats {
  tries: number;
  successes: number;
}

/**
 * `best`: for epsilon-greedy the arm exploited (argmax of successes/tries); for Thompson
 * sampling the arm with the highest posterior mean, reported only (choices are sampled).
 */
export interface BanditState {
  arms: ArmStats[];
  best: number;
}

/** What the shared state object reports for one router node. */
export interface BanditStateSnapshot {
  params: BanditParams;
  arms: ArmStats[];
  best: number;
  /** Epoch ms of the last write (creation, reset or feedback). */
  updatedAt: number;
}

export const DEFAULT_PRIOR = Object.freeze({ alpha: 1, beta: 1 });

/**
 * Rows one feedback call may credit: a request's batch size, at most. Seldon takes the
 * row count from the request it is sent back (`tensor.shape[0]`), so without a bound one
 * call claiming `shape: [1e300]` would outweigh all history. Larger batches are sent as
 * several feedback calls.
 */
export const MAX_FEEDBACK_ROWS = 1_000;

/**
 * Checks params and returns them with defaults made explicit (`seed` and `best_branch`
 * null, Thompson `prior` filled in), unknown keys dropped. Throws RangeError naming the
 * bad field: a caller error, to be answered with a 400.
 */
export function normalizeParams(params: BanditParams): BanditParams {
  if (params === null || typeof params !== "object") throw new RangeError("bandit params must be an object");
  const n = params.n_branches;
  if (!Number.isSafeInteger(n) || n < 1) throw new RangeError(`bandit n_branches must be an integer >= 1, got ${String(n)}`);
  const seed = params.seed ?? null;
  if (seed !== null && !Number.isSafeInteger(seed)) throw new RangeError(`bandit seed must be an integer, got ${String(seed)}`);
  let names: string[] | undefined;
  if (params.branch_names !== undefined && params.branch_names !== null) {
    if (!Array.isArray(params.branch_names) || params.branch_names.some((s) => typeof s !== "string")) {
      throw new RangeError("bandit branch_names must be a list of strings");
    }
    if (params.branch_names.length !== n) {
      throw new RangeError(`bandit branch_names has ${params.branch_names.length} names for n_branches ${n}`);
    }
    names = [...params.branch_names];
  }
  const withNames = <T extends object>(p: T): T => (names ? { ...p, branch_names: names } : p);

  if (params.kind === "epsilon_greedy") {
    const epsilon = params.epsilon;
    if (typeof epsilon !== "number" || !(epsilon >= 0 && epsilon <= 1)) {
      throw new RangeError(`bandit epsilon must be a number in [0, 1], got ${String(epsilon)}`);
    }
    const best = params.best_branch ?? null;
    if (best !== null && (!Number.isInteger(best) || best < 0 || best >= n)) {
      throw new RangeError(`bandit best_branch must be an integer in [0, ${n - 1}], got ${String(best)}`);
    }
    return withNames({ kind: "epsilon_greedy", n_branches: n, epsilon, best_branch: best, seed });
  }
  if (params.kind === "thompson_sampling") {
    const prior = params.prior ?? DEFAULT_PRIOR;
    for (const key of ["alpha", "beta"] as const) {
      const v = prior[key];
      if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
        throw new RangeError(`bandit prior.${key} must be a finite number > 0, got ${String(v)}`);
      }
    }
    return withNames({ kind: "thompson_sampling", n_branches: n, seed, prior: { alpha: prior.alpha, beta: prior.beta } });
  }
  throw new RangeError(`bandit kind must be "epsilon_greedy" or "thompson_sampling", got ${String((params as { kind: unknown }).kind)}`);
}

/** Zero counts on every arm. Epsilon-greedy's best arm is `best_branch` when given (0 included), else drawn uniformly. */
export function initialState(params: BanditParams, random: RandomSource): BanditState {
  const n = params.n_branches;
  const arms = Array.from({ length: n }, () => ({ tries: 0, successes: 0 }));
  if (params.kind === "thompson_sampling") return { arms, best: 0 };
  const given = params.best_branch ?? null;
  return { arms, best: given !== null ? given : n === 1 ? 0 : uniformInt(random, n) };
}

/**
 * The arm for one request.
 * - epsilon-greedy: the best arm with probability 1 - epsilon, otherwise uniformly one of
 *   the OTHER arms (so each other arm gets epsilon / (n - 1)). One arm: always 0.
 * - Thompson sampling: one draw from each arm's Beta posterior, the largest wins; ties go
 *   to the lowest index.
 */
export function chooseArm(params: BanditParams, state: BanditState, random: RandomSource): number {
  const n = params.n_branches;
  checkShape(params, state);
  if (n === 1) return 0;
  if (params.kind === "epsilon_greedy") {
    if (uniformFloat(random) >= params.epsilon) return state.best;
    const other = uniformInt(random, n - 1);
    return other >= state.best ? other + 1 : other;
  }
  const prior = params.prior ?? DEFAULT_PRIOR;
  let chosen = 0;
  let top = -Infinity;
  state.arms.forEach((arm, i) => {
    const sample = sampleBeta(random, prior.alpha + arm.successes, prior.beta + Math.max(0, arm.tries - arm.successes));
    if (sample > top) {
      top = sample;
      chosen = i;
    }
  });
  return chosen;
}

/**
 * The state after feedback on `arm` for a request of `rows` rows.
 * - `reward` is a success rate in [0, 1] (Seldon's examples use 0/1).
 * - `rows` is a whole number in [1, MAX_FEEDBACK_ROWS]: the caller counts an empty
 *   request as one observation.
 * - `tries += rows`, `successes += reward * rows`, kept fractional.
 * - epsilon-greedy: best = argmax of successes / tries (an untried arm counts 0), ties
 *   broken uniformly at random, as Seldon does. Thompson: best = highest posterior mean,
 *   ties to the lowest index, no randomness used.
 * Throws RangeError for an arm outside [0, n_branches), a reward outside [0, 1] (or not a
 * number) or rows outside [1, MAX_FEEDBACK_ROWS] (or not whole).
 */
export function applyFeedback(params: BanditParams, state: BanditState, arm: number, reward: number, rows: number, random: RandomSource): BanditState {
  checkShape(params, state);
  checkFeedback(params, arm, reward, rows);
  const arms = state.arms.map((a, i) => (i === arm ? { tries: a.tries + rows, successes: a.successes + reward * rows } : { ...a }));
  return { arms, best: bestArm(params, arms, random) };
}

/** The checks `applyFeedback` makes on its request, for callers that must refuse before touching state. */
export function checkFeedback(params: BanditParams, arm: number, reward: number, rows: number): void {
  if (!Number.isInteger(arm) || arm < 0 || arm >= params.n_branches) {
    throw new RangeError(`bandit arm must be an integer in [0, ${params.n_branches - 1}], got ${String(arm)}`);
  }
  if (typeof reward !== "number" || !(reward >= 0 && reward <= 1)) throw new RangeError(`bandit reward must be a number in [0, 1], got ${String(reward)}`);
  if (typeof rows !== "number" || !Number.isInteger(rows) || rows < 1 || rows > MAX_FEEDBACK_ROWS) {
    throw new RangeError(`bandit rows must be a whole number in [1, ${MAX_FEEDBACK_ROWS}], got ${String(rows)}`);
  }
}

/** Seldon's RANDOM_ABTEST: child 0 (A) with probability ratioA, else child 1 (B). */
export function abTestArm(ratioA: number, random: RandomSource): 0 | 1 {
  if (typeof ratioA !== "number" || !(ratioA >= 0 && ratioA <= 1)) throw new RangeError(`ratioA must be a number in [0, 1], got ${String(ratioA)}`);
  return uniformFloat(random) < ratioA ? 0 : 1;
}

/** A seeded source that can say how far it has got, so the sequence can be resumed. */
export interface SeededRandomSource extends RandomSource {
  /** uint32s drawn so far; `seededRandom(seed, position)` continues from here. */
  readonly position: number;
}

/**
 * A seeded source for `seed`: deterministic per node (SplitMix32: a Weyl counter through
 * an avalanche hash), so tests and users can reproduce Seldon's `seed` parameter
 * semantics. Counter-based, so resuming at `position` costs nothing. The seed is taken
 * mod 2^32 and the sequence repeats after 2^32 draws (Thompson sampling draws about 12
 * per arm per choice: some 10^8 choices on three arms). Not for secrets.
 */
export function seededRandom(seed: number, position = 0): SeededRandomSource {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer, got ${String(seed)}`);
  if (!Number.isSafeInteger(position) || position < 0) throw new RangeError(`position must be an integer >= 0, got ${String(position)}`);
  const key = seed >>> 0;
  let drawn = position;
  return {
    get position() {
      return drawn;
    },
    uint32() {
      drawn += 1;
      let z = (key + Math.imul(drawn >>> 0, 0x9e3779b9)) >>> 0;
      z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
      z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
      return (z ^ (z >>> 15)) >>> 0;
    },
  };
}

/** Counts kept under `before` would be attributed to other arms under `after`: the arms start again. */
export function needsReset(before: BanditParams, after: BanditParams): boolean {
  if (before.kind !== after.kind || before.n_branches !== after.n_branches) return true;
  const a = before.branch_names;
  const b = after.branch_names;
  return a !== undefined && b !== undefined && a.some((name, i) => name !== b[i]);
}

function bestArm(params: BanditParams, arms: ArmStats[], random: RandomSource): number {
  if (params.kind === "thompson_sampling") {
    const prior = params.prior ?? DEFAULT_PRIOR;
    let best = 0;
    let top = -Infinity;
    arms.forEach((a, i) => {
      const mean = (prior.alpha + a.successes) / (prior.alpha + prior.beta + a.tries);
      if (mean > top) {
        top = mean;
        best = i;
      }
    });
    return best;
  }
  const values = arms.map((a) => (a.tries > 0 ? a.successes / a.tries : 0));
  const top = Math.max(...values);
  const ties = values.flatMap((v, i) => (v === top ? [i] : []));
  return ties.length === 1 ? ties[0]! : ties[uniformInt(random, ties.length)]!;
}

function checkShape(params: BanditParams, state: BanditState): void {
  if (state.arms.length !== params.n_branches) {
    throw new RangeError(`bandit state has ${state.arms.length} arms but n_branches is ${params.n_branches}`);
  }
}

/** (0, 1]: safe under a logarithm. */
const openUniform = (random: RandomSource): number => 1 - uniformFloat(random);

/** Standard normal by Box–Muller (one of the pair is kept: the sampler stays stateless). */
function sampleNormal(random: RandomSource): number {
  const u = openUniform(random);
  const v = uniformFloat(random);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** Gamma(shape, 1) by Marsaglia–Tsang; shapes below 1 by the boost Gamma(a) = Gamma(a + 1)·U^(1/a). */
function sampleGamma(random: RandomSource, shape: number): number {
  if (shape < 1) return sampleGamma(random, shape + 1) * Math.pow(openUniform(random), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = sampleNormal(random);
    const t = 1 + c * x;
    if (t <= 0) continue;
    const v = t * t * t;
    const u = openUniform(random);
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** Beta(a, b) as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b). Both underflowing to 0 (tiny shapes) reads as a coin flip's mean. */
function sampleBeta(random: RandomSource, a: number, b: number): number {
  const x = sampleGamma(random, a);
  const y = sampleGamma(random, b);
  const sum = x + y;
  return sum > 0 ? x / sum : 0.5;
}
