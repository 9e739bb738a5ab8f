/** The PrincipalLimits object: grants within the total, usage applied once, state kept across a restart. */
import { env } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { limitsObjectName } from "../../src/app/state/object-names";
import type { BucketLimits, LimitSync } from "../../src/core/limits/wire";
import { frozenClock } from "../support/state";

const limits: BucketLimits = { tokens: { total: 1_000, window: "minute" }, requests: { total: 10, window: "minute" } };
const stub = () => env.PRINCIPAL_LIMITS.getByName(limitsObjectName(`key=t-${crypto.randomUUID()}`));
let clock: ReturnType<typeof frozenClock> | null = null;
afterEach(() => {
  clock?.restore();
  clock = null;
});

const T0 = Date.UTC(2027, 0, 1, 12, 0, 0);
const window = Math.floor(T0 / 60_000);
const ask = (isolate: string, tokens: number, batches: LimitSync["batches"] = []): LimitSync => ({ isolate, limits, hold: { tokens, requests: 1 }, ttlMs: 10_000, batches });
const used = (seq: number, tokens: number): LimitSync["batches"][number] => ({ seq, usage: [{ dim: "tokens", window, amount: tokens }, { dim: "requests", window, amount: 1 }] });

describe("PrincipalLimits", () => {
  it("grants within the total across isolates, applies a resent batch once, and keeps spend and grants across a restart", async () => {
    clock = frozenClock(T0);
    const object = stub();
    expect((await object.sync(ask("a", 600))).dims.tokens).toMatchObject({ granted: 600, free: 400 });
    expect((await object.sync(ask("b", 600))).dims.tokens).toMatchObject({ granted: 400, free: 0 });
    await object.sync(ask("a", 100, [used(1, 500)])); // its answer is lost
    const resent = await object.sync(ask("a", 100, [used(1, 500)]));
    expect(resent).toMatchObject({ acked: 1, dims: { tokens: { spent: 500, granted: 100, free: 0 }, requests: { spent: 1 } } });
    await evictDurableObject(object);
    const afterRestart = await object.sync(ask("a", 100, [used(1, 500)]));
    expect(afterRestart).toMatchObject({ acked: 1, dims: { tokens: { spent: 500, granted: 100 } } });
    expect((await object.snapshot()).dims.tokens).toMatchObject({ spent: 500, granted: 500, isolates: 2 }); // b still holds its 400
  });
});
