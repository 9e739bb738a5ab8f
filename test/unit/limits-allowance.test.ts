/**
 * The allowance machine a limits object runs (src/core/limits/allowance.ts) and the
 * isolate's ledger that spends from its grants (src/core/limits/ledger.ts), pure, on a
 * clock the test moves.
 */
import { describe, expect, it } from "vitest";
import { Allowance } from "../../src/core/limits/allowance";
import { BucketLedger, GRANT_MARGIN_MS, GRANT_TTL_MS } from "../../src/core/limits/ledger";
import { windowAt, windowIdAt } from "../../src/core/limits/windows";
import type { BucketLimits, Dimension, LimitNews, UsageItem } from "../../src/core/limits/wire";
import type { Sealed } from "../../src/core/state/batches";

const T0 = Date.UTC(2027, 0, 1, 12, 0, 0); // on a minute boundary
const TOKENS: BucketLimits = { tokens: { total: 10_000, window: "minute" } };

function sync(a: Allowance, isolate: string, limits: BucketLimits, hold: Record<string, number>, now: number, batches: Sealed<LimitNews>[] = []) {
  return a.sync({ isolate, limits, hold, ttlMs: GRANT_TTL_MS, batches }, now);
}
const used = (seq: number, amount: number, window = Math.floor(T0 / 60_000), dim: "tokens" | "spend" | "requests" = "tokens"): Sealed<LimitNews> => ({ seq, usage: [{ dim, window, amount }] });

describe("Allowance (the object's machine)", () => {
  it("never grants past the total, however many isolates ask", () => {
    const a = new Allowance();
    const grants = ["i1", "i2", "i3"].map((i) => sync(a, i, TOKENS, { tokens: 6_000 }, T0).dims.tokens!.granted);
    expect(grants).toEqual([6_000, 4_000, 0]);
    expect(a.snapshot(T0).dims.tokens).toMatchObject({ granted: 10_000, spent: 0 });
  });

  it("moves reported use from the grant into spent, once however often the batch is resent", () => {
    const a = new Allowance();
    sync(a, "i1", TOKENS, { tokens: 4_000 }, T0);
    const first = sync(a, "i1", TOKENS, { tokens: 1_000 }, T0 + 10, [used(1, 3_000)]);
    expect(first).toMatchObject({ acked: 1, dims: { tokens: { granted: 1_000, spent: 3_000, free: 6_000 } } });
    const resent = sync(a, "i1", TOKENS, { tokens: 1_000 }, T0 + 20, [used(1, 3_000)]);
    expect(resent.dims.tokens).toMatchObject({ spent: 3_000, granted: 1_000 });
  });

  it("gives back what an isolate no longer asks for, and an expired grant to the others", () => {
    const a = new Allowance();
    sync(a, "i1", TOKENS, { tokens: 9_000 }, T0);
    expect(sync(a, "i2", TOKENS, { tokens: 5_000 }, T0).dims.tokens!.granted).toBe(1_000);
    sync(a, "i1", TOKENS, { tokens: 2_000 }, T0 + 100);
    expect(sync(a, "i2", TOKENS, { tokens: 5_000 }, T0 + 100).dims.tokens!.granted).toBe(5_000);
    // i1 vanishes: its 2,000 come back once its ttl has passed, not before.
    expect(sync(a, "i2", TOKENS, { tokens: 8_000 }, T0 + 100 + GRANT_TTL_MS - 1).dims.tokens!.granted).toBe(8_000);
    expect(sync(a, "i2", TOKENS, { tokens: 10_000 }, T0 + 100 + GRANT_TTL_MS - 1).dims.tokens!.granted).toBe(8_000);
    expect(sync(a, "i2", TOKENS, { tokens: 10_000 }, T0 + 100 + GRANT_TTL_MS).dims.tokens!.granted).toBe(10_000);
  });

  it("starts each window afresh; use reported for an ended window counts nowhere", () => {
    const a = new Allowance();
    sync(a, "i1", TOKENS, { tokens: 10_000 }, T0, [used(1, 10_000)]);
    expect(sync(a, "i2", TOKENS, { tokens: 1 }, T0 + 59_999).dims.tokens!.granted).toBe(0);
    const next = sync(a, "i2", TOKENS, { tokens: 3_000 }, T0 + 60_000, [used(1, 500)]);
    expect(next.dims.tokens).toMatchObject({ granted: 3_000, spent: 0, window: Math.floor(T0 / 60_000) + 1 });
  });

  it("keeps what was spent through a live limit change; a lowered total shrinks grants as they renew", () => {
    const a = new Allowance();
    sync(a, "i1", TOKENS, { tokens: 5_000 }, T0, [used(1, 4_000)]);
    const lower: BucketLimits = { tokens: { total: 6_000, window: "minute" } };
    expect(sync(a, "i1", lower, { tokens: 5_000 }, T0 + 10).dims.tokens).toMatchObject({ spent: 4_000, granted: 2_000, total: 6_000 });
    const higher: BucketLimits = { tokens: { total: 20_000, window: "minute" } };
    expect(sync(a, "i1", higher, { tokens: 5_000 }, T0 + 20).dims.tokens).toMatchObject({ spent: 4_000, granted: 5_000 });
  });

  it("counts spend in calendar windows and a fixed budget until its reset", () => {
    const a = new Allowance();
    const fixed: BucketLimits = { spend: { total: 10, window: "fixed", resetAt: T0 + 3_600_000 } };
    sync(a, "i1", fixed, { spend: 10 }, T0, [used(1, 10, 0, "spend")]);
    expect(sync(a, "i1", fixed, { spend: 1 }, T0 + 3_599_999).dims.spend).toMatchObject({ granted: 0, spent: 10 });
    expect(sync(a, "i1", fixed, { spend: 1 }, T0 + 3_600_000).dims.spend).toMatchObject({ granted: 1, spent: 0 });
  });

  it("carries what was spent in the running window when the config changes the window or a budget's reset date", () => {
    // A fixed budget's end moved later: the trial goes on, and so does its spend.
    const a = new Allowance();
    const until = (resetAt: number): BucketLimits => ({ spend: { total: 10, window: "fixed", resetAt } });
    const before = windowAt("fixed", T0, T0 + 3_600_000).id;
    sync(a, "i1", until(T0 + 3_600_000), { spend: 9 }, T0, [used(1, 8, before, "spend")]);
    expect(sync(a, "i1", until(T0 + 7_200_000), { spend: 5 }, T0 + 10).dims.spend).toMatchObject({ spent: 8, granted: 2 });
    // Use an isolate reports for the window it took over still counts.
    expect(sync(a, "i1", until(T0 + 7_200_000), { spend: 0 }, T0 + 20, [used(2, 1, before, "spend")]).dims.spend).toMatchObject({ spent: 9 });
    expect(sync(a, "i1", until(T0 + 7_200_000), { spend: 1 }, T0 + 7_200_000).dims.spend).toMatchObject({ spent: 0, granted: 1 }); // then its own reset

    // A month made a day: this month's spend counts against today, and tomorrow starts afresh.
    const b = new Allowance();
    sync(b, "i1", { spend: { total: 100, window: "month" } }, { spend: 40 }, T0, [used(1, 30, windowAt("month", T0).id, "spend")]);
    const day: BucketLimits = { spend: { total: 50, window: "day" } };
    expect(sync(b, "i1", day, { spend: 0 }, T0 + 10).dims.spend).toMatchObject({ spent: 30 });
    expect(sync(b, "i1", day, { spend: 0 }, windowAt("day", T0).endsAt).dims.spend).toMatchObject({ spent: 0 });

    // A fixed budget already past its end when its date moves: nothing carries.
    const c = new Allowance();
    sync(c, "i1", until(T0 + 1_000), { spend: 9 }, T0, [used(1, 8, windowAt("fixed", T0, T0 + 1_000).id, "spend")]);
    expect(sync(c, "i1", until(T0 + 7_200_000), { spend: 0 }, T0 + 2_000).dims.spend).toMatchObject({ spent: 0 });
  });

  it("survives a restart from its stored state", () => {
    const a = new Allowance();
    sync(a, "i1", TOKENS, { tokens: 3_000 }, T0, [used(1, 2_000)]);
    const b = new Allowance();
    b.restore(JSON.parse(JSON.stringify(a.state)));
    expect(sync(b, "i2", TOKENS, { tokens: 10_000 }, T0 + 1).dims.tokens).toMatchObject({ spent: 2_000, granted: 5_000 });
  });
});

/** An isolate's ledger bound to an allowance, syncing by hand. */
function isolate(a: Allowance, id: string, limits: BucketLimits) {
  const ledger = new BucketLedger(limits);
  let seq = 0;
  const unacked: Sealed<LimitNews>[] = [];
  const items = (): UsageItem[] => unacked.flatMap((b) => b.usage);
  return {
    ledger,
    items,
    sync(now: number) {
      const news = ledger.drain();
      if (news) unacked.push({ ...news, seq: ++seq });
      const answer = a.sync({ isolate: id, limits, hold: ledger.hold(now), ttlMs: GRANT_TTL_MS, batches: [...unacked] }, now);
      unacked.splice(0, unacked.length, ...unacked.filter((b) => b.seq > answer.acked));
      ledger.adopt(answer, now);
      return answer;
    },
    /** A sync while requests wanting `wants` wait for room (as LimitAgent.reserveWaiting tells the ledger). */
    syncFor(wants: Partial<Record<Dimension, number>>, now: number, waiting = 1) {
      for (let n = 0; n < waiting; n++) ledger.wait(wants);
      const answer = this.sync(now);
      for (let n = 0; n < waiting; n++) ledger.wait(wants, -1);
      return answer;
    },
  };
}

describe("BucketLedger (the isolate's side)", () => {
  it("reserves only what fits in its grant, and in every dimension or none", () => {
    const a = new Allowance();
    const limits: BucketLimits = { requests: { total: 100, window: "minute" }, tokens: { total: 1_000, window: "minute" } };
    const i = isolate(a, "i1", limits);
    expect(i.ledger.reserve({ requests: 1, tokens: 300 }, T0, []).ok).toBe(false); // no grant yet
    i.syncFor({ requests: 1, tokens: 300 }, T0); // it waits: the sync asks room for it
    expect(i.ledger.available("tokens", T0, [])).toBeGreaterThanOrEqual(300);
    const grant = i.ledger.available("tokens", T0, []);
    const fits = i.ledger.reserve({ requests: 1, tokens: grant }, T0, []);
    expect(fits.ok).toBe(true);
    const over = i.ledger.reserve({ requests: 1, tokens: 1 }, T0, []);
    expect(over).toEqual({ ok: false, dim: "tokens" });
    // The refused reservation took nothing: requests are untouched by it.
    expect(i.ledger.reservedOf("requests", T0)).toBe(1);
  });

  it("an exact fit is allowed, one token more is not", () => {
    const a = new Allowance();
    const i = isolate(a, "i1", TOKENS);
    i.syncFor({ tokens: 500 }, T0);
    const have = i.ledger.available("tokens", T0, []);
    const probe = new BucketLedger(TOKENS);
    probe.adopt(a.sync({ isolate: "probe", limits: TOKENS, hold: { tokens: 500 }, ttlMs: GRANT_TTL_MS, batches: [] }, T0), T0);
    expect(probe.reserve({ tokens: 501 }, T0, []).ok).toBe(false);
    expect(probe.reserve({ tokens: 500 }, T0, []).ok).toBe(true);
    expect(have).toBeGreaterThan(0);
  });

  it("settles actual use, reports it once, and counts it until the object has", () => {
    const a = new Allowance();
    const i = isolate(a, "i1", TOKENS);
    i.syncFor({ tokens: 1_000 }, T0);
    const before = i.ledger.available("tokens", T0, []);
    const r = i.ledger.reserve({ tokens: 400 }, T0, []);
    if (!r.ok) throw new Error("expected a fit");
    expect(i.ledger.available("tokens", T0, [])).toBe(before - 400);
    i.ledger.settle(r.reservation, { tokens: 150 });
    expect(i.ledger.available("tokens", T0, [])).toBe(before - 150); // pending use still counts
    i.sync(T0 + 10);
    expect(a.snapshot(T0 + 10).dims.tokens!.spent).toBe(150);
    expect(i.ledger.drain()).toBeNull();
  });

  it("stops spending a grant before the object could give it away, and at the window's end", () => {
    const a = new Allowance();
    const i = isolate(a, "i1", TOKENS);
    i.syncFor({ tokens: 100 }, T0);
    expect(i.ledger.available("tokens", T0 + GRANT_TTL_MS - GRANT_MARGIN_MS - 1, [])).toBeGreaterThan(0);
    expect(i.ledger.available("tokens", T0 + GRANT_TTL_MS - GRANT_MARGIN_MS, [])).toBe(0);
    const late = isolate(a, "i2", TOKENS);
    late.syncFor({ tokens: 100 }, T0 + 59_000);
    expect(late.ledger.available("tokens", T0 + 59_999, [])).toBeGreaterThan(0);
    expect(late.ledger.available("tokens", T0 + 60_000, [])).toBe(0);
  });

  it("asks for what is in flight plus a refill while busy, and only what is in flight once idle", () => {
    const a = new Allowance();
    const i = isolate(a, "i1", TOKENS);
    i.syncFor({ tokens: 50 }, T0);
    const r = i.ledger.reserve({ tokens: 50 }, T0, []);
    if (!r.ok) throw new Error("expected a fit");
    expect(i.ledger.hold(T0).tokens).toBe(50 + 100); // in flight + max(demand 50, 1% of 10,000)
    expect(i.ledger.hold(T0 + 5_000).tokens).toBe(50);
  });
});

describe("concurrency grants (the bench's 429s at 16 clients under a limit of 100,000)", () => {
  const CONCURRENT: BucketLimits = { concurrent: { total: 100_000, window: "none" } };

  it("asks for room for every request waiting at once, not only for one of them", () => {
    const a = new Allowance();
    const i = isolate(a, "i1", CONCURRENT);
    // A cold isolate: 16 requests arrive together; none fits, all wait for one sync.
    for (let n = 0; n < 16; n++) expect(i.ledger.reserve({ concurrent: 1 }, T0, []).ok).toBe(false);
    i.syncFor({ concurrent: 1 }, T0, 16);
    for (let n = 0; n < 16; n++) expect(i.ledger.reserve({ concurrent: 1 }, T0, []).ok).toBe(true);
    expect(i.ledger.hold(T0 + 5_000).concurrent).toBe(16); // and nothing waits any more: idle, it holds what is in flight
  });

  it("holds headroom over its recent peak while busy, so a slightly higher peak needs no call; only what is in flight once idle", () => {
    const a = new Allowance();
    const i = isolate(a, "i1", CONCURRENT);
    i.syncFor({ concurrent: 1 }, T0, 16);
    const taken = Array.from({ length: 16 }, () => i.ledger.reserve({ concurrent: 1 }, T0, []));
    i.sync(T0 + 10);
    expect(i.ledger.hold(T0 + 10).concurrent).toBe(16 + 8);
    expect(i.ledger.reserve({ concurrent: 1 }, T0 + 10, []).ok).toBe(true); // the 17th fits without a sync
    for (const r of taken) if (r.ok) i.ledger.settle(r.reservation, {});
    expect(i.ledger.hold(T0 + 5_000).concurrent).toBe(1); // idle: the one still in flight
  });

  it("keeps its headroom within REFILL_MAX_SHARE of a small limit", () => {
    const a = new Allowance();
    const small: BucketLimits = { concurrent: { total: 20, window: "none" } };
    const i = isolate(a, "i1", small);
    i.syncFor({ concurrent: 1 }, T0, 4);
    for (let n = 0; n < 4; n++) i.ledger.reserve({ concurrent: 1 }, T0, []);
    expect(i.ledger.hold(T0).concurrent).toBe(4 + 1); // headroom min(ceil(4 × 0.5), floor(20 × 0.05)) = 1
  });
});

describe("overshoot, simulated", () => {
  /**
   * 16 clients over 2 isolates spend one budget: each request reserves its prediction,
   * uses a random share of it (or, with `over`, up to that much more), and settles; the
   * isolates sync every 200 ms of simulated time. Deterministic (a fixed LCG), so no
   * false failures.
   */
  function run(over: number) {
    const a = new Allowance();
    const limits: BucketLimits = { tokens: { total: 100_000, window: "minute" } };
    const isolates = [isolate(a, "A", limits), isolate(a, "B", limits)];
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    let spentByIsolates = 0;
    let refused = 0;
    let maxReservation = 0;
    for (let step = 0; step < 600; step++) {
      const now = T0 + step * 50;
      for (let client = 0; client < 16; client++) {
        const i = isolates[client % 2]!;
        const want = 200 + Math.floor(random() * 800);
        maxReservation = Math.max(maxReservation, want);
        let r = i.ledger.reserve({ tokens: want }, now, i.items());
        if (!r.ok) {
          i.sync(now); // the awaited acquire
          r = i.ledger.reserve({ tokens: want }, now, i.items());
        }
        if (!r.ok) {
          refused++;
          continue;
        }
        const actual = Math.round(want * (over > 0 ? 1 + random() * over : random()));
        spentByIsolates += actual;
        i.ledger.settle(r.reservation, { tokens: actual });
      }
      if (step % 4 === 0) for (const i of isolates) i.sync(now);
    }
    for (const i of isolates) i.sync(T0 + 600 * 50);
    return { spent: a.snapshot(T0 + 30_000).dims.tokens!.spent, spentByIsolates, refused, maxReservation };
  }

  it("with use within its reservation, the budget is never exceeded and the isolates' sum is the object's total", () => {
    const { spent, spentByIsolates, refused } = run(0);
    expect(refused).toBeGreaterThan(0); // the budget did run out
    expect(spentByIsolates).toBe(spent);
    expect(spent).toBeLessThanOrEqual(100_000);
    expect(spent).toBeGreaterThan(95_000); // and little of it was left unspent
  });

  it("with use past its reservation (a short estimate), overshoot is only that excess", () => {
    const { spent, spentByIsolates } = run(0.01);
    expect(spentByIsolates).toBe(spent);
    expect(spent).toBeLessThanOrEqual(100_000 * 1.01 + 1_000);
  });
});

describe("windowIdAt (a window's id without allocating)", () => {
  it("names the same window as windowAt for every kind, on both sides of each boundary", () => {
    const resetAt = Date.UTC(2026, 11, 1);
    const times = [Date.UTC(2026, 10, 30, 23, 59, 59, 999), Date.UTC(2026, 11, 1), Date.UTC(2026, 11, 1, 0, 0, 0, 1), Date.UTC(2026, 11, 31, 23, 0), Date.UTC(2027, 0, 1, 0, 30), 0, 59_999, 60_000];
    for (const kind of ["minute", "hour", "day", "month", "fixed", "none"] as const) {
      for (const now of times) expect(windowIdAt(kind, now, resetAt), `${kind} at ${now}`).toBe(windowAt(kind, now, resetAt).id);
    }
    // And the windows do change where they should (a constant id would agree with nothing).
    expect(windowIdAt("hour", Date.UTC(2026, 11, 1, 0, 59))).not.toBe(windowIdAt("hour", Date.UTC(2026, 11, 1, 1, 0)));
    expect(windowIdAt("day", Date.UTC(2026, 11, 1, 23, 59))).not.toBe(windowIdAt("day", Date.UTC(2026, 11, 2)));
  });
});
