import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { banditObjectName } from "../../src/app/state/object-names";
import type { BanditParams, EpsilonGreedyParams, ThompsonParams } from "../../src/core/graph/bandits";
import { seededRandom } from "../../src/core/graph/bandits";
import { uniformFloat } from "../../src/lib/random";
import { frozenClock } from "../support/state";

const fresh = () => env.BANDIT.getByName(banditObjectName("g", `router-${crypto.randomUUID().slice(0, 8)}`));
const eg = (extra: Partial<EpsilonGreedyParams> = {}): EpsilonGreedyParams => ({ kind: "epsilon_greedy", n_branches: 3, epsilon: 0.1, ...extra });
const ts = (extra: Partial<ThompsonParams> = {}): ThompsonParams => ({ kind: "thompson_sampling", n_branches: 3, ...extra });
type Stub = ReturnType<typeof fresh>;
/** One credit, as an isolate's batch of one (each from a new isolate, so none is taken for a resend). */
const feedback = (stub: Stub, params: BanditParams, arm: number, reward: number, rows: number) =>
  stub.sync({ isolate: crypto.randomUUID(), params, batches: [{ seq: 1, feedback: [{ arm, reward, rows }] }] });

/** The error an RPC call fails with, as "Name: message" (awaited in try/catch: no stray rejection). */
async function failure(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
  return "no error";
}

let time: ReturnType<typeof frozenClock> | undefined;
afterEach(() => {
  time?.restore();
  time = undefined;
});

describe("bandit state object", () => {
  it("has no state before first use, and creates it on the first choice", async () => {
    time = frozenClock(1_700_000_000_000);
    const stub = fresh();
    expect(await stub.snapshot()).toBeNull();
    const { arm } = await stub.choose(eg({ best_branch: 0, epsilon: 0 }));
    expect(arm).toBe(0);
    expect(await stub.snapshot()).toEqual({
      params: { kind: "epsilon_greedy", n_branches: 3, epsilon: 0, best_branch: 0, seed: null },
      arms: [
        { tries: 0, successes: 0 },
        { tries: 0, successes: 0 },
        { tries: 0, successes: 0 },
      ],
      best: 0,
      updatedAt: 1_700_000_000_000,
    });
  });

  it("counts 200 concurrent feedback calls exactly (one read-modify-write each)", async () => {
    const stub = fresh();
    const params = eg();
    // Rewards are dyadic (exact in binary), so the sums do not depend on arrival order.
    const calls = Array.from({ length: 200 }, (_, i) => ({ arm: i % 3, reward: [1, 0.5, 0.25][i % 3]!, rows: 1 + (i % 4) }));
    // Separate stubs, as separate isolates would hold.
    const stubs = Array.from({ length: 10 }, () => env.BANDIT.get(stub.id));
    await Promise.all(calls.map((c, i) => feedback(stubs[i % stubs.length]!, params, c.arm, c.reward, c.rows)));

    const expected = [0, 1, 2].map((arm) => {
      const mine = calls.filter((c) => c.arm === arm);
      return { tries: mine.reduce((s, c) => s + c.rows, 0), successes: mine.reduce((s, c) => s + c.reward * c.rows, 0) };
    });
    const snap = await stub.snapshot();
    expect(snap!.arms).toEqual(expected);
    expect(snap!.best).toBe(0); // success rates 1, 0.5, 0.25

    const stored = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql.exec<{ arm: number; tries: number; successes: number }>("SELECT arm, tries, successes FROM arms ORDER BY arm").toArray(),
    );
    expect(stored).toEqual(expected.map((e, arm) => ({ arm, ...e })));
  });

  it("keeps its state across eviction", async () => {
    const stub = fresh();
    const params = ts({ prior: { alpha: 2, beta: 3 } });
    await feedback(stub, params, 1, 0.9, 1);
    await feedback(stub, params, 2, 1, 4);
    const before = await stub.snapshot();
    expect(before!.arms[1]).toEqual({ tries: 1, successes: 0.9 });

    await evictDurableObject(stub);
    expect(await stub.snapshot()).toEqual(before);
    const after = await feedback(stub, params, 1, 0.5, 2);
    expect(after.arms[1]).toEqual({ tries: 3, successes: 1.9 });
  });

  it("continues a seeded sequence after eviction instead of replaying it", async () => {
    const params = eg({ epsilon: 0.5, seed: 0 });
    const once = fresh();
    const twice = fresh();
    const straight: number[] = [];
    for (let i = 0; i < 60; i++) straight.push((await once.choose(params)).arm);
    const interrupted: number[] = [];
    for (let i = 0; i < 60; i++) {
      if (i === 25) await evictDurableObject(twice);
      interrupted.push((await twice.choose(params)).arm);
    }
    expect(interrupted).toEqual(straight);
    expect(new Set(straight).size).toBe(3); // epsilon 0.5: all three arms occur
  });

  // The isolate checks every credit before queueing it (POST /feedback answers 400); the
  // object checks again, as a credit checked under params since changed may reach it.
  it("skips credits for an arm outside the branches, a bad reward or bad rows, refuses bad params, and changes nothing", async () => {
    const stub = fresh();
    const params = eg();
    await feedback(stub, params, 0, 1, 1);
    const before = await stub.snapshot();
    for (const [arm, reward, rows] of [[3, 1, 1], [0, Number.NaN, 1], [0, 1.5, 1], [0, 1, 1e300], [0, 1, 0], [0, 1, 2.5], [-1, 1, 1]] as const) {
      const view = await feedback(stub, params, arm, reward, rows);
      expect(view.acked, `${arm} ${reward} ${rows}`).toBe(1); // taken, and skipped: a resend would change nothing either
      expect({ arms: view.arms, best: view.best }).toEqual({ arms: before!.arms, best: before!.best });
    }
    expect(await failure(() => feedback(stub, { ...params, epsilon: 2 }, 0, 1, 1))).toMatch(/epsilon/);
    expect(await failure(() => stub.choose({ ...params, n_branches: 0 }))).toMatch(/n_branches/);
    expect(await stub.snapshot()).toEqual(before);
  });

  it("applies a batch once when its answer was lost and it is sent again, before and after eviction", async () => {
    const stub = fresh();
    const params = eg();
    const batch = (seq: number, arm: number) => ({ seq, feedback: [{ arm, reward: 1, rows: 2 }, { arm, reward: 0, rows: 1 }] });
    await stub.sync({ isolate: "i", params, batches: [batch(1, 1)] }); // its answer is lost
    const resent = await stub.sync({ isolate: "i", params, batches: [batch(1, 1), batch(2, 2)] });
    expect(resent.acked).toBe(2);
    expect(resent.arms).toEqual([{ tries: 0, successes: 0 }, { tries: 3, successes: 2 }, { tries: 3, successes: 2 }]);
    await evictDurableObject(stub); // the applied seq is stored with the arms: a restart does not forget it
    const again = await stub.sync({ isolate: "i", params, batches: [batch(2, 2)] });
    expect(again.acked).toBe(2);
    expect(again.arms).toEqual(resent.arms);
    // Another isolate's batch 1 is its own.
    expect((await stub.sync({ isolate: "j", params, batches: [batch(1, 0)] })).arms[0]).toEqual({ tries: 3, successes: 2 });
  });

  it("resets the arms when n_branches, kind or branch names change, and keeps them for other changes", async () => {
    const stub = fresh();
    await feedback(stub, eg({ branch_names: ["a", "b", "c"] }), 1, 1, 5);
    // epsilon changed: counts kept, params adopted.
    const kept = await feedback(stub, eg({ epsilon: 0.3, branch_names: ["a", "b", "c"] }), 1, 0, 1);
    expect(kept.arms[1]).toEqual({ tries: 6, successes: 5 });
    expect((kept.params as EpsilonGreedyParams).epsilon).toBe(0.3);
    // names reordered: the counts would belong to other models.
    const renamed = await feedback(stub, eg({ branch_names: ["b", "a", "c"] }), 0, 1, 1);
    expect(renamed.arms).toEqual([{ tries: 1, successes: 1 }, { tries: 0, successes: 0 }, { tries: 0, successes: 0 }]);
    // a fourth branch.
    await stub.choose(eg({ n_branches: 4 }));
    expect((await stub.snapshot())!.arms).toHaveLength(4);
    expect((await stub.snapshot())!.arms.every((a) => a.tries === 0)).toBe(true);
    // another algorithm.
    await feedback(stub, eg({ n_branches: 4 }), 3, 1, 1);
    await stub.choose(ts({ n_branches: 4 }));
    const switched = await stub.snapshot();
    expect(switched!.params.kind).toBe("thompson_sampling");
    expect(switched!.arms.every((a) => a.tries === 0)).toBe(true);

    await evictDurableObject(stub);
    expect(await stub.snapshot()).toEqual(switched);
  });
});

/**
 * Simulated traffic: three arms succeed with probabilities 0.2, 0.5, 0.8. Each round
 * chooses through the object, draws the reward from the chosen arm's rate with the test's
 * own seeded source, and sends the feedback. Both the object (params `seed`) and the
 * reward draws are seeded, so each run is reproducible; three seeds per algorithm.
 *
 * Bounds over the last 500 of 2,000 rounds, with the shares observed when these tests
 * were written (seeds 1, 2, 3; tries per arm over all 2,000 rounds in brackets):
 *   epsilon-greedy, epsilon 0.1: arm 2 ≥ 80% (ideal 90% = 1 - epsilon);
 *     observed 90.8% (82/95/1823), 89.8% (113/115/1772), 87.8% (112/95/1793)
 *   Thompson sampling: arm 2 ≥ 75%;
 *     observed 99.6% (7/18/1975), 100% (4/33/1963), 100% (6/16/1978)
 * Over 300 unseeded runs of the same loop on the pure functions: epsilon-greedy min
 * 86.2%, median 90.0%; Thompson min 97.0%, median 99.8%. So the bounds are not tuned
 * to the seeds.
 */
describe("convergence", () => {
  const RATES = [0.2, 0.5, 0.8];
  const ROUNDS = 2_000;
  const TAIL = 500;

  async function simulate(params: BanditParams, rewardSeed: number): Promise<{ tailShare: number; arms: number[] }> {
    // Inside the object: the same methods and storage as over RPC, without 4,000 round
    // trips through the test harness (which took ~5 s per run).
    return runInDurableObject(fresh(), async (bandit) => {
      const rewards = seededRandom(rewardSeed);
      let tailBest = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const { arm } = await bandit.choose(params);
        const reward = uniformFloat(rewards) < RATES[arm]! ? 1 : 0;
        await bandit.sync({ isolate: "simulation", params, batches: [{ seq: round + 1, feedback: [{ arm, reward, rows: 1 }] }] });
        if (round >= ROUNDS - TAIL && arm === 2) tailBest++;
      }
      const snap = await bandit.snapshot();
      return { tailShare: tailBest / TAIL, arms: snap!.arms.map((a) => a.tries) };
    });
  }

  for (const seed of [1, 2, 3]) {
    it(`epsilon-greedy (epsilon 0.1, seed ${seed}) routes ≥ 80% of the last 500 rounds to the best arm`, async () => {
      const { tailShare, arms } = await simulate(eg({ epsilon: 0.1, seed }), 1_000 + seed);
      expect(tailShare).toBeGreaterThanOrEqual(0.8);
      expect(arms.reduce((s, n) => s + n, 0)).toBe(ROUNDS);
    });

    it(`Thompson sampling (seed ${seed}) routes ≥ 75% of the last 500 rounds to the best arm`, async () => {
      const { tailShare, arms } = await simulate(ts({ seed }), 2_000 + seed);
      expect(tailShare).toBeGreaterThanOrEqual(0.75);
      expect(arms.reduce((s, n) => s + n, 0)).toBe(ROUNDS);
    });
  }
});
