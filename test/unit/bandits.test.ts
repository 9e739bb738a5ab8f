import { describe, expect, it } from "vitest";
import type { BanditParams, BanditState, EpsilonGreedyParams, ThompsonParams } from "../../src/core/graph/bandits";
import { abTestArm, applyFeedback, chooseArm, initialState, MAX_FEEDBACK_ROWS, normalizeParams, seededRandom } from "../../src/core/graph/bandits";
import { cryptoRandom } from "../../src/lib/random";
import { scripted } from "../support/scripted-random";
import { CHI2_CRITICAL_1E4, chiSquare, missRate } from "../support/statistics";

const eg = (extra: Partial<EpsilonGreedyParams> = {}): EpsilonGreedyParams => ({ kind: "epsilon_greedy", n_branches: 3, epsilon: 0.1, ...extra });
const ts = (extra: Partial<ThompsonParams> = {}): ThompsonParams => ({ kind: "thompson_sampling", n_branches: 3, ...extra });
const state = (arms: Array<[tries: number, successes: number]>, best = 0): BanditState => ({
  arms: arms.map(([tries, successes]) => ({ tries, successes })),
  best,
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function counts(n: number, draws: number, pick: () => number): number[] {
  const c = new Array<number>(n).fill(0);
  for (let i = 0; i < draws; i++) c[pick()]!++;
  return c;
}

describe("normalizeParams", () => {
  it("makes defaults explicit and keeps seed 0 and best_branch 0 (Seldon drops both as falsy)", () => {
    expect(normalizeParams(eg({ seed: 0, best_branch: 0 }))).toEqual({ kind: "epsilon_greedy", n_branches: 3, epsilon: 0.1, best_branch: 0, seed: 0 });
    expect(normalizeParams(ts())).toEqual({ kind: "thompson_sampling", n_branches: 3, seed: null, prior: { alpha: 1, beta: 1 } });
    expect(normalizeParams(ts({ branch_names: ["a", "b", "c"] })).branch_names).toEqual(["a", "b", "c"]);
  });

  it("refuses bad params with a RangeError naming the field", () => {
    expect(() => normalizeParams(eg({ n_branches: 0 }))).toThrow(/n_branches/);
    expect(() => normalizeParams(eg({ n_branches: 2.5 }))).toThrow(/n_branches/);
    expect(() => normalizeParams(eg({ epsilon: 1.5 }))).toThrow(/epsilon/);
    expect(() => normalizeParams(eg({ epsilon: Number.NaN }))).toThrow(/epsilon/);
    expect(() => normalizeParams(eg({ best_branch: 3 }))).toThrow(/best_branch/);
    expect(() => normalizeParams(eg({ seed: 1.5 }))).toThrow(/seed/);
    expect(() => normalizeParams(eg({ branch_names: ["a", "b"] }))).toThrow(/branch_names/);
    expect(() => normalizeParams(ts({ prior: { alpha: 0, beta: 1 } }))).toThrow(/prior.alpha/);
    expect(() => normalizeParams({ kind: "ucb", n_branches: 2 } as unknown as BanditParams)).toThrow(/kind/);
    expect(() => normalizeParams(eg({ n_branches: 0 }))).toThrow(RangeError);
  });
});

describe("initialState", () => {
  it("honours best_branch = 0 without drawing (Seldon ignores 0 and picks at random)", () => {
    const source = scripted([]);
    expect(initialState(eg({ best_branch: 0 }), source)).toEqual(state([[0, 0], [0, 0], [0, 0]], 0));
    expect(source.used).toBe(0);
  });

  it("draws the initial best uniformly when best_branch is absent or null", () => {
    expect(initialState(eg(), scripted([2])).best).toBe(2);
    expect(initialState(eg({ best_branch: null }), scripted([7])).best).toBe(7 % 3);
    expect(initialState(eg({ n_branches: 1 }), scripted([])).best).toBe(0);
  });

  it("starts Thompson sampling at zero counts, reporting arm 0 as best", () => {
    expect(initialState(ts(), scripted([]))).toEqual(state([[0, 0], [0, 0], [0, 0]], 0));
  });
});

describe("epsilon-greedy choice", () => {
  it("routes the best arm with frequency 1 - epsilon and the others uniformly (chi-square, 20,000 crypto draws)", () => {
    const params = eg({ epsilon: 0.2 });
    const s = state([[0, 0], [0, 0], [0, 0]], 1);
    const draws = 20_000;
    const c = counts(3, draws, () => chooseArm(params, s, cryptoRandom()));
    expect(chiSquare(c, [0.1, 0.8, 0.1], draws)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });

  it("never routes the best arm when exploring, and only the best arm with epsilon 0", () => {
    const s = state([[0, 0], [0, 0], [0, 0], [0, 0]], 2);
    const random = cryptoRandom();
    const explored = counts(4, 4_000, () => chooseArm(eg({ n_branches: 4, epsilon: 1 }), s, random));
    expect(explored[2]).toBe(0);
    expect(chiSquare([explored[0]!, explored[1]!, explored[3]!], [1 / 3, 1 / 3, 1 / 3], 4_000)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
    expect(counts(4, 1_000, () => chooseArm(eg({ n_branches: 4, epsilon: 0 }), s, random))[2]).toBe(1_000);
  });

  it("maps the exploring draw around the best arm", () => {
    // uniformFloat 0 < epsilon explores; uniformInt(2) = 0 → arm 0, 1 → arm 2 (skipping best = 1).
    expect(chooseArm(eg({ epsilon: 0.5 }), state([[0, 0], [0, 0], [0, 0]], 1), scripted([0, 0, 0]))).toBe(0);
    expect(chooseArm(eg({ epsilon: 0.5 }), state([[0, 0], [0, 0], [0, 0]], 1), scripted([0, 0, 1]))).toBe(2);
  });

  it("always answers 0 with one branch, even when it would explore (Seldon: IndexError)", () => {
    const source = scripted([]);
    expect(chooseArm(eg({ n_branches: 1, epsilon: 1 }), state([[0, 0]]), source)).toBe(0);
    expect(chooseArm(ts({ n_branches: 1 }), state([[0, 0]]), source)).toBe(0);
  });

  it("refuses a state whose arm count does not match the params", () => {
    expect(() => chooseArm(eg(), state([[0, 0]]), cryptoRandom())).toThrow(/arms/);
  });
});

describe("feedback", () => {
  it("accumulates fractional rewards exactly: 0.9 on one row adds 0.9 (Seldon adds int(0.9) = 0)", () => {
    const next = applyFeedback(eg(), state([[0, 0], [0, 0], [0, 0]]), 1, 0.9, 1, cryptoRandom());
    expect(next.arms[1]).toEqual({ tries: 1, successes: 0.9 });
    const again = applyFeedback(eg(), next, 1, 0.25, 4, cryptoRandom());
    expect(again.arms[1]).toEqual({ tries: 5, successes: 1.9 });
  });

  it("refuses rows that are not a whole number in [1, MAX_FEEDBACK_ROWS]: one call cannot outweigh the history", () => {
    const s = state([[10, 9], [0, 0], [0, 0]]);
    expect(applyFeedback(eg(), s, 2, 1, 1, cryptoRandom()).arms[2]).toEqual({ tries: 1, successes: 1 });
    expect(applyFeedback(eg(), s, 2, 0.5, MAX_FEEDBACK_ROWS, cryptoRandom()).arms[2]).toEqual({ tries: MAX_FEEDBACK_ROWS, successes: MAX_FEEDBACK_ROWS / 2 });
    for (const rows of [0, -3, 2.7, MAX_FEEDBACK_ROWS + 1, 1e300, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => applyFeedback(eg(), s, 2, 1, rows, cryptoRandom()), String(rows)).toThrow(/^bandit rows must be a whole number in \[1, 1000\]/);
    }
  });

  it("refuses a reward outside [0, 1] (a success rate, as Seldon counts it), non-numbers and foreign arms", () => {
    const s = state([[0, 0], [0, 0], [0, 0]]);
    expect(applyFeedback(eg(), s, 0, 0, 2, cryptoRandom()).arms[0]).toEqual({ tries: 2, successes: 0 });
    expect(applyFeedback(eg(), s, 0, 1, 2, cryptoRandom()).arms[0]).toEqual({ tries: 2, successes: 2 });
    for (const reward of [1.7, -0.3, 1e300, Number.NEGATIVE_INFINITY]) {
      expect(() => applyFeedback(eg(), s, 0, reward, 2, cryptoRandom()), String(reward)).toThrow(/^bandit reward must be a number in \[0, 1\]/);
    }
    expect(() => applyFeedback(eg(), s, 3, 1, 1, cryptoRandom())).toThrow(/arm must be an integer in \[0, 2\]/);
    expect(() => applyFeedback(eg(), s, -1, 1, 1, cryptoRandom())).toThrow(RangeError);
    expect(() => applyFeedback(eg(), s, 1.5, 1, 1, cryptoRandom())).toThrow(RangeError);
    expect(() => applyFeedback(eg(), s, 0, Number.NaN, 1, cryptoRandom())).toThrow(/reward/);
    expect(() => applyFeedback(eg(), s, 0, 1, Number.POSITIVE_INFINITY, cryptoRandom())).toThrow(/rows/);
  });

  it("moves epsilon-greedy's best to the highest success rate, ties broken at random", () => {
    const s = state([[10, 5], [10, 6], [0, 0]], 1);
    expect(applyFeedback(eg(), s, 0, 1, 10, scripted([])).best).toBe(0); // 15/20 > 6/10: no tie, no draw
    // arm 2 gets 3/5 = 6/10: a tie between arms 1 and 2, and one draw picks among them.
    const tied = applyFeedback(eg(), s, 2, 0.6, 5, scripted([1]));
    expect(tied.best).toBe(2);
    expect(applyFeedback(eg(), s, 2, 0.6, 5, scripted([0])).best).toBe(1);
  });

  it("reports Thompson's best as the highest posterior mean without drawing", () => {
    const s = state([[0, 0], [0, 0], [0, 0]]);
    expect(applyFeedback(ts(), s, 2, 1, 3, scripted([])).best).toBe(2);
    expect(applyFeedback(ts(), s, 2, 0, 3, scripted([])).best).toBe(0); // arms 0 and 1 tie at 1/2: lowest index
  });

  it("never mutates its inputs", () => {
    const params = deepFreeze(eg());
    const s = deepFreeze(state([[4, 1], [4, 3], [0, 0]], 0));
    const before = JSON.stringify(s);
    const next = applyFeedback(params, s, 1, 1, 2, cryptoRandom());
    expect(JSON.stringify(s)).toBe(before);
    expect(next.arms).not.toBe(s.arms);
    expect(next.arms[0]).not.toBe(s.arms[0]);
    chooseArm(params, s, cryptoRandom());
    chooseArm(deepFreeze(ts()), s, cryptoRandom());
    initialState(params, cryptoRandom());
    expect(JSON.stringify(s)).toBe(before);
  });
});

describe("Thompson sampling choice", () => {
  it("wins with the exact posterior probabilities (checks the Beta sampler, 20,000 crypto draws)", () => {
    const random = cryptoRandom();
    const draws = 20_000;
    // Arm 0 ~ Beta(2, 1) (density 2x), arm 1 ~ Beta(1, 1): P(arm 0) = ∫ 2x·x dx = 2/3.
    const one = counts(2, draws, () => chooseArm(ts({ n_branches: 2 }), state([[1, 1], [0, 0]]), random));
    expect(chiSquare(one, [2 / 3, 1 / 3], draws)).toBeLessThan(CHI2_CRITICAL_1E4[1]);
    // Arm 0 ~ Beta(1, 2), arm 1 ~ Beta(2, 1): P(arm 0) = ∫ 2(1-x)·x² dx = 1/6.
    const two = counts(2, draws, () => chooseArm(ts({ n_branches: 2 }), state([[1, 0], [1, 1]]), random));
    expect(chiSquare(two, [1 / 6, 5 / 6], draws)).toBeLessThan(CHI2_CRITICAL_1E4[1]);
    // Shapes below 1 (the boost path): Beta(0.5, 0.5) against itself is a fair coin.
    const low = counts(2, draws, () => chooseArm(ts({ n_branches: 2, prior: { alpha: 0.5, beta: 0.5 } }), state([[0, 0], [0, 0]]), random));
    expect(chiSquare(low, [1 / 2, 1 / 2], draws)).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("prefers the arm with better feedback", () => {
    const random = cryptoRandom();
    // Beta(31, 71), Beta(71, 31), Beta(51, 51): arm 1 loses ~0.2% of draws (to arm 2, 2.9 sd behind).
    const c = counts(3, 2_000, () => chooseArm(ts(), state([[100, 30], [100, 70], [100, 50]]), random));
    expect(c[1]! / 2_000).toBeGreaterThan(0.99);
  });

  it("uses the configured prior: a pessimistic prior keeps an untried arm below a proven one", () => {
    const random = cryptoRandom();
    // Arm 0: Beta(1 + 8, 50 + 2); arm 1 untried: Beta(1, 50). Mean 0.15 vs 0.02.
    const c = counts(2, 2_000, () => chooseArm(ts({ n_branches: 2, prior: { alpha: 1, beta: 50 } }), state([[10, 8], [0, 0]]), random));
    expect(c[0]! / 2_000).toBeGreaterThan(0.95);
  });

  it("breaks ties to the lowest index (degenerate prior: every sample underflows to the same value)", () => {
    const params = ts({ prior: { alpha: 1e-300, beta: 1e-300 } });
    const random = cryptoRandom();
    for (let i = 0; i < 100; i++) expect(chooseArm(params, state([[0, 0], [0, 0], [0, 0]]), random)).toBe(0);
  });
});

describe("seededRandom", () => {
  const take = (source: { uint32(): number }, n: number) => Array.from({ length: n }, () => source.uint32());

  it("reproduces the same sequence for a seed, and another for another seed (0 included)", () => {
    expect(take(seededRandom(42), 20)).toEqual(take(seededRandom(42), 20));
    expect(take(seededRandom(0), 20)).toEqual(take(seededRandom(0), 20));
    expect(take(seededRandom(0), 20)).not.toEqual(take(seededRandom(1), 20));
    for (const v of take(seededRandom(7), 100)) expect(Number.isInteger(v) && v >= 0 && v < 2 ** 32).toBe(true);
  });

  it("resumes at a position and reports how far it has got", () => {
    const whole = take(seededRandom(9), 30);
    const first = seededRandom(9);
    take(first, 12);
    expect(first.position).toBe(12);
    expect(take(seededRandom(9, first.position), 18)).toEqual(whole.slice(12));
  });

  it("reproduces a whole bandit run, choices and feedback", () => {
    const run = (seed: number) => {
      const params = eg({ epsilon: 0.3, seed });
      const random = seededRandom(seed);
      let s = initialState(params, random);
      const arms: number[] = [];
      for (let i = 0; i < 200; i++) {
        const arm = chooseArm(params, s, random);
        arms.push(arm);
        s = applyFeedback(params, s, arm, arm === 2 ? 1 : 0, 1, random);
      }
      return { arms, s };
    };
    expect(run(5)).toEqual(run(5));
    expect(run(5).arms).not.toEqual(run(6).arms);
  });

  it("spreads its draws evenly (chi-square over 2 halves and over 3 residues)", () => {
    const source = seededRandom(123);
    const draws = 20_000;
    const high = counts(2, draws, () => (source.uint32() >= 2 ** 31 ? 1 : 0));
    expect(chiSquare(high, [0.5, 0.5], draws)).toBeLessThan(CHI2_CRITICAL_1E4[1]);
    const mod = counts(3, draws, () => source.uint32() % 3);
    expect(chiSquare(mod, [1 / 3, 1 / 3, 1 / 3], draws)).toBeLessThan(CHI2_CRITICAL_1E4[2]);
  });

  it("refuses a fractional seed", () => {
    expect(() => seededRandom(1.5)).toThrow(RangeError);
  });
});

describe("abTestArm (RANDOM_ABTEST)", () => {
  // 20,000 draws, false failure 1e-4 (chi-square, 1 df). A split 5 points off (0.35 or
  // 0.25 under a 0.3 test) passes with probability < 1e-33: computed and run below.
  it("sends ratioA of traffic to child 0 within a chi-square bound", () => {
    const random = cryptoRandom();
    const draws = 20_000;
    const c = counts(2, draws, () => abTestArm(0.3, random));
    expect(chiSquare(c, [0.3, 0.7], draws), `${c}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });

  it("a split 5 points off fails that test: computed and run", () => {
    const random = cryptoRandom();
    const draws = 20_000;
    for (const ratio of [0.25, 0.35]) {
      expect(missRate(draws, 0.3, ratio, CHI2_CRITICAL_1E4[1])).toBeLessThan(1e-20);
      const c = counts(2, draws, () => abTestArm(ratio, random));
      expect(chiSquare(c, [0.3, 0.7], draws), `${c}`).toBeGreaterThan(CHI2_CRITICAL_1E4[1]);
    }
  });

  it("is exact at the ends and refuses ratios outside [0, 1]", () => {
    const random = cryptoRandom();
    for (let i = 0; i < 200; i++) {
      expect(abTestArm(1, random)).toBe(0);
      expect(abTestArm(0, random)).toBe(1);
    }
    expect(abTestArm(0.5, scripted([0, 0]))).toBe(0);
    expect(() => abTestArm(1.2, random)).toThrow(RangeError);
    expect(() => abTestArm(Number.NaN, random)).toThrow(RangeError);
  });
});

describe("a Thompson router's prior from config", () => {
  const graph = (router: string) => `models: { gm: { graph: g } }
graphs:
  g:
    nodes:
      root:
        routerType: Router
        router: ${router}
        steps: [ { serviceUrl: "http://10.0.0.1/a" }, { serviceUrl: "http://10.0.0.1/b" } ]
`;
  it("reaches the bandit's params as written, and is Beta(1, 1) when left out", async () => {
    const { loadConfig } = await import("../../src/core/config/load");
    const { banditParams } = await import("../../src/app/model-call/graph");
    const routerOf = (text: string) => {
      const loaded = loadConfig(text, {});
      if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
      return loaded.config.graphs.g!.nodes.root!.router!;
    };
    expect(banditParams(routerOf(graph("{ type: thompson_sampling, n_branches: 2, prior: { alpha: 2, beta: 5 } }")))).toMatchObject({ kind: "thompson_sampling", prior: { alpha: 2, beta: 5 } });
    expect(banditParams(routerOf(graph("{ type: thompson_sampling, n_branches: 2 }")))).not.toHaveProperty("prior");
    for (const bad of ["{ alpha: 0, beta: 1 }", "{ alpha: 1 }", "{ alpha: 1, beta: 2000000 }", "{ alpha: 1, beta: 1, gamma: 1 }"]) {
      expect(loadConfig(graph(`{ type: thompson_sampling, n_branches: 2, prior: ${bad} }`), {}).ok, bad).toBe(false);
    }
  });
});
