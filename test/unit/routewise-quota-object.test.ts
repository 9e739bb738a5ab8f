/** The quota object: the usage API's truth, isolates' use between polls, window resets, fail-safe. */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { quotaObjectName } from "../../src/app/state/object-names";
import type { QuotaSpec } from "../../src/core/routewise/wire";
import { providersClosedAfterEach } from "../support/fleet";
import { frozenClock } from "../support/state";

const providers = providersClosedAfterEach();
const stub = () => env.PROVIDER_QUOTA.getByName(quotaObjectName(`t-${crypto.randomUUID()}`));
const spec = (url: string, window_s = 10): QuotaSpec => ({
  id: "q",
  limit: 1_000,
  unit: "tokens",
  source: { url: `${url}/usage`, auth: undefined, used_path: "data.used", limit_path: "data.limit", reset_path: "data.reset_at", window: "fixed", window_s, poll_s: 60, timeout_ms: 5_000, stale_after_s: 300 },
});

let clock: ReturnType<typeof frozenClock> | null = null;
afterEach(() => {
  clock?.restore();
  clock = null;
});

describe("ProviderQuota", () => {
  it("takes isolates' use off the last poll, and forgets both when the window resets", async () => {
    clock = frozenClock();
    const [provider] = await providers([{ quotaLimit: 1_000, quotaWindowMs: 10_000 }], "qobj");
    await provider!.setUsed(100);
    const quota = stub();
    const first = await quota.sync({ spec: spec(provider!.url), used: 0 });
    expect(first).toMatchObject({ remaining: 900, limit: 1_000, failSafe: null });
    const resetAt = first.resetAt!;
    expect(resetAt).toBeGreaterThan(clock.now);

    expect((await quota.sync({ spec: spec(provider!.url), used: 300 })).remaining).toBe(600);
    clock.advance(resetAt - clock.now + 1); // just past the reset, no poll since
    const after = await quota.snapshot();
    expect(after.remaining).toBe(1_000);
    expect(after.resetAt).toBe(resetAt + 10_000); // the next reset, not one in the past
    expect((await quota.sync({ spec: spec(provider!.url), used: 50 })).remaining).toBe(950);
  });

  it("fails safe until its first good poll, and says why the poll failed", async () => {
    const [provider] = await providers([{ quotaLimit: 1_000, usageDown: true }], "qdown");
    const state = await stub().sync({ spec: spec(provider!.url), used: 0 });
    expect(state).toMatchObject({ remaining: 0, failSafe: "never_polled", polledAt: null });
    expect(state.lastError).toBe("usage API answered HTTP 503");
  });

  it("reads a usage answer without the number it needs as a failed poll, naming the path", async () => {
    const [provider] = await providers([{ quotaLimit: 1_000 }], "qpath");
    const bad = { ...spec(provider!.url), source: { ...spec(provider!.url).source, used_path: "data.spent" } };
    const state = await stub().sync({ spec: bad, used: 0 });
    expect(state.failSafe).toBe("never_polled");
    expect(state.lastError).toContain('used_path "data.spent"');
  });
});
