import { describe, expect, it } from "vitest";
import { sloOrder } from "../../src/core/picking/scoring/slo";
import { TTFT_MAX_MS, TTFT_MIN_OBSERVATIONS, TtftModel, queueingAhead } from "../../src/core/picking/scoring/ttft-model";
import { seeded } from "../support/seeded-random";
import { EngineSlots } from "../../src/core/picking/scoring/engine-slots";
import { metrics } from "../support/candidates";

/** A fleet whose TTFT is base 5 ms + 2 ms per uncached block + 30 ms per request ahead, ±10% noise. */
function truth(blocks: number, inflight: number): number {
  return 5 + 2 * blocks + 30 * inflight;
}

function trained(samples: number, noise: () => number, law = truth): TtftModel {
  const model = new TtftModel();
  for (let i = 0; i < samples; i++) {
    const blocks = Math.floor(noise() * 200);
    const inflight = Math.floor(noise() * 8);
    model.observe({ uncachedBlocks: blocks, inflight }, law(blocks, inflight) * (0.9 + 0.2 * noise()));
  }
  return model;
}

function uniform01(seed: number): () => number {
  const random = seeded(seed);
  return () => random.uint32() / 2 ** 32;
}

describe("TtftModel", () => {
  it("withholds predictions until it has seen enough answers", () => {
    const model = trained(TTFT_MIN_OBSERVATIONS - 1, uniform01(1));
    expect(model.predict({ uncachedBlocks: 10, inflight: 1 })).toBeNull();
    model.observe({ uncachedBlocks: 10, inflight: 1 }, truth(10, 1));
    expect(model.predict({ uncachedBlocks: 10, inflight: 1 })).not.toBeNull();
  });

  it("learns prefill per block and queueing per request from noisy answers (300 samples, 3 seeds)", () => {
    for (const seed of [1, 2, 3]) {
      const model = trained(300, uniform01(seed));
      const [, perBlock, perRequest] = model.coefficients;
      expect(perBlock).toBeGreaterThan(1.6);
      expect(perBlock).toBeLessThan(2.4);
      expect(perRequest).toBeGreaterThan(24);
      expect(perRequest).toBeLessThan(36);
      const cold = model.predict({ uncachedBlocks: 150, inflight: 0 })!;
      const warmButBusy = model.predict({ uncachedBlocks: 0, inflight: 4 })!;
      expect(Math.abs(cold - truth(150, 0)) / truth(150, 0)).toBeLessThan(0.15);
      expect(Math.abs(warmButBusy - truth(0, 4)) / truth(0, 4)).toBeLessThan(0.15);
    }
  });

  it("forgets: after the fleet slows down threefold, predictions follow within a few hundred answers", () => {
    const noise = uniform01(4);
    const model = trained(300, noise);
    const slow = (b: number, q: number) => 3 * truth(b, q);
    for (let i = 0; i < 600; i++) {
      const blocks = Math.floor(noise() * 200);
      const inflight = Math.floor(noise() * 8);
      model.observe({ uncachedBlocks: blocks, inflight }, slow(blocks, inflight));
    }
    const predicted = model.predict({ uncachedBlocks: 100, inflight: 2 })!;
    expect(Math.abs(predicted - slow(100, 2)) / slow(100, 2)).toBeLessThan(0.1);
  });

  it("ignores answers it cannot use and never predicts below zero", () => {
    const model = trained(50, uniform01(5));
    const before = model.coefficients;
    model.observe({ uncachedBlocks: 1, inflight: 0 }, Number.NaN);
    model.observe({ uncachedBlocks: 1, inflight: 0 }, -5);
    expect(model.coefficients).toEqual(before);
    expect(model.predict({ uncachedBlocks: -100, inflight: -100 })).toBeGreaterThanOrEqual(0);
  });

  it("ignores out-of-range answers and inputs: a 1e308 TTFT, or a non-finite or absurd feature, leaves the fit as it was", () => {
    const model = trained(50, uniform01(6));
    const before = model.coefficients;
    model.observe({ uncachedBlocks: 1, inflight: 0 }, 1e308);
    model.observe({ uncachedBlocks: Number.NaN, inflight: 0 }, 20);
    model.observe({ uncachedBlocks: 1, inflight: Number.POSITIVE_INFINITY }, 20);
    model.observe({ uncachedBlocks: 1e308, inflight: 0 }, 20);
    model.observe({ uncachedBlocks: 1, inflight: 1e308 }, 20);
    expect(model.coefficients).toEqual(before);
    expect(model.predict({ uncachedBlocks: Number.NaN, inflight: 1 })).toBeNull(); // unknown input: no prediction
  });

  it("stays finite and keeps learning over 200k short-prompt, low-concurrency answers (features that barely vary)", () => {
    // The fleet: a one-block prompt, nothing else in flight, ~20 ms. Only the
    // sum base + perBlock is seen; the rest of the covariance grew by 1/0.995 an answer,
    // drowning what was learned long before it overflowed (NaN at about 140k answers).
    const noise = uniform01(7);
    const model = new TtftModel();
    const answer = (ms: number) => model.observe({ uncachedBlocks: noise() < 0.01 ? 0 : 1, inflight: 0 }, ms * (0.95 + 0.1 * noise()));
    for (let i = 0; i < 130_000; i++) answer(20);
    expect(Math.abs(model.predict({ uncachedBlocks: 1, inflight: 0 })! - 20) / 20).toBeLessThan(0.1);
    // It still follows the fleet: three times slower, within a few hundred answers...
    for (let i = 0; i < 600; i++) answer(60);
    expect(Math.abs(model.predict({ uncachedBlocks: 1, inflight: 0 })! - 60) / 60).toBeLessThan(0.1);
    // ...and back, and past the point where it used to overflow.
    for (let i = 0; i < 70_000; i++) answer(20);
    expect(model.coefficients.every(Number.isFinite)).toBe(true);
    expect(Math.abs(model.predict({ uncachedBlocks: 1, inflight: 0 })! - 20) / 20).toBeLessThan(0.1);
    for (const input of [{ uncachedBlocks: 200, inflight: 0 }, { uncachedBlocks: 0, inflight: 8 }]) expect(Number.isFinite(model.predict(input))).toBe(true);
  });
});

describe("TtftModel: the knee past the engine's running slots", () => {
  const SLOTS = 4;
  /** An engine with 4 running slots: 5 ms + 2 ms a block + 3 ms a request in the batch, and 60 ms per request queued ahead once the slots are full. */
  const kneeLaw = (blocks: number, inflight: number) => 5 + 2 * blocks + 3 * Math.min(inflight, SLOTS) + 60 * queueingAhead(inflight, SLOTS, null);

  function kneeTrained(seed: number, samples = 400): TtftModel {
    const noise = uniform01(seed);
    const model = new TtftModel();
    for (let i = 0; i < samples; i++) {
      const blocks = Math.floor(noise() * 100);
      const inflight = Math.floor(noise() * 10); // up to 6 queued ahead
      model.observe({ uncachedBlocks: blocks, inflight, queued: queueingAhead(inflight, SLOTS, null) }, kneeLaw(blocks, inflight) * (0.9 + 0.2 * noise()));
    }
    return model;
  }
  const at = (inflight: number) => ({ uncachedBlocks: 0, inflight, queued: queueingAhead(inflight, SLOTS, null) });

  it("learns a replica's running slots from a scrape that shows requests waiting, the largest such batch", () => {
    const slots = new EngineSlots();
    const m = (running: number, waiting: number) => metrics({ running, waiting });
    slots.observe("a", m(3, 0)); // nothing waiting: a batch, not the limit
    expect(slots.of("a")).toBeNull();
    slots.observe("a", m(3, 2)); // a batch cut short (by KV, say)...
    slots.observe("a", m(4, 1)); // ...then a full one
    slots.observe("a", m(2, 5));
    slots.observe("a", { ...m(4, 1), waiting: null }); // unknown: ignored
    expect([slots.of("a"), slots.of("b")]).toEqual([4, null]);
  });

  it("counts requests queued ahead only past the slots; without known slots, the engine's own waiting count", () => {
    expect([0, 2, 3, 4, 7].map((n) => queueingAhead(n, SLOTS, null))).toEqual([0, 0, 0, 1, 4]);
    expect(queueingAhead(7, null, 2)).toBe(2);
    expect(queueingAhead(7, null, null)).toBe(0);
    expect(queueingAhead(7, SLOTS, 0)).toBe(4); // the router's exact count wins over a scrape
  });

  it("predicts TTFT rising steeply past saturation, as the engine's queue grows (400 noisy answers, 3 seeds)", () => {
    for (const seed of [1, 2, 3]) {
      const model = kneeTrained(seed);
      const below = model.predict(at(2))!;
      const full = model.predict(at(3))!;
      const past = [4, 5, 6, 8].map((n) => model.predict(at(n))!);
      expect(full - below).toBeLessThan(15); // a bigger batch: a few ms
      expect(past[0]! - full).toBeGreaterThan(40); // one queued ahead: ~60 ms
      for (let k = 1; k < past.length; k++) expect(past[k]!).toBeGreaterThan(past[k - 1]!);
      // A warm prompt behind 6 queued (~380 ms) answers later than a cold 100-block prefill with a free slot (~215 ms).
      expect(model.predict(at(9))!).toBeGreaterThan(model.predict({ uncachedBlocks: 100, inflight: 0, queued: 0 })!);
    }
  });

  it("stays finite, at least 0 and at most TTFT_MAX_MS for absurd inputs; an input it cannot read gives no prediction", () => {
    const model = kneeTrained(1);
    for (const input of [
      { uncachedBlocks: 1_000_000, inflight: 1_000_000, queued: 1_000_000 },
      { uncachedBlocks: 0, inflight: 0, queued: 999_999 },
      { uncachedBlocks: -1e9, inflight: -1e9, queued: -1e9 },
    ]) {
      const ms = model.predict(input)!;
      expect(Number.isFinite(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(TTFT_MAX_MS);
    }
    expect(model.predict({ uncachedBlocks: 1, inflight: 1, queued: Number.NaN })).toBeNull();
    expect(model.predict({ uncachedBlocks: 1, inflight: 1, queued: Number.POSITIVE_INFINITY })).toBeNull();
    const before = model.coefficients;
    model.observe({ uncachedBlocks: 1, inflight: 1, queued: 1e308 }, 20);
    expect(model.coefficients).toEqual(before);
  });

  it("never predicts sooner for more load, even when noise fits a negative load coefficient", () => {
    const model = new TtftModel();
    const noise = uniform01(4);
    // Answers that get faster with load (a warming cache, say): the fitted load terms go negative.
    for (let i = 0; i < 200; i++) {
      const inflight = Math.floor(noise() * 10);
      model.observe({ uncachedBlocks: 10, inflight, queued: queueingAhead(inflight, SLOTS, null) }, 400 - 30 * inflight);
    }
    expect(model.coefficients[2]! < 0 || model.coefficients[3]! < 0).toBe(true);
    const predictions = [0, 2, 4, 6, 9].map((n) => model.predict({ ...at(n), uncachedBlocks: 10 })!);
    for (let k = 1; k < predictions.length; k++) expect(predictions[k]!).toBeGreaterThanOrEqual(predictions[k - 1]!);
  });
});

describe("sloOrder", () => {
  const predictions: Record<string, number> = { a: 300, b: 80, c: 120, d: 90 };
  it("puts replicas that meet the objective first in the policy's order, then the rest soonest first", () => {
    const ttft = (objectiveMs: number) => ({ objectiveMs, predictMs: (id: string) => predictions[id]! });
    expect(sloOrder(["a", "b", "c", "d"], [ttft(100)])).toEqual(["b", "d", "c", "a"]);
    expect(sloOrder(["d", "b", "a", "c"], [ttft(100)])).toEqual(["d", "b", "c", "a"]);
    expect(sloOrder(["a", "c"], [ttft(100)])).toEqual(["c", "a"]); // none meets it: best effort
    expect(sloOrder(["a", "c"], [ttft(120)])).toEqual(["c", "a"]); // at the objective meets it
  });

  it("keeps the policy's order while any prediction is missing", () => {
    expect(sloOrder(["a", "b"], [{ objectiveMs: 100, predictMs: (id) => (id === "a" ? null : 1) }])).toEqual(["a", "b"]);
  });

  it("treats a non-finite prediction as missing: never routes on it, never drops a replica", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(sloOrder(["a", "b", "c"], [{ objectiveMs: 100, predictMs: (id) => (id === "b" ? bad : 300) }])).toEqual(["a", "b", "c"]);
      expect(sloOrder(["a", "b", "c"], [{ objectiveMs: 100, predictMs: () => bad }])).toEqual(["a", "b", "c"]);
    }
  });

  it("with TTFT and TPOT objectives, only replicas meeting both go first; an objective it cannot judge is left out", () => {
    const ttft = { objectiveMs: 100, predictMs: (id: string) => ({ a: 50, b: 50, c: 300 })[id]! };
    const tpot = { objectiveMs: 20, predictMs: (id: string) => ({ a: 40, b: 10, c: 10 })[id]! };
    expect(sloOrder(["a", "b", "c"], [ttft, tpot])).toEqual(["b", "a", "c"]); // a overshoots TPOT by 1.0, c TTFT by 2.0
    const unknownTpot = { objectiveMs: 20, predictMs: (id: string) => (id === "c" ? null : 1) };
    expect(sloOrder(["c", "a", "b"], [ttft, unknownTpot])).toEqual(["a", "b", "c"]); // TTFT alone decides
  });
});
