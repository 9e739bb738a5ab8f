/** The quota object: the usage API's truth, isolates' use between polls, window resets, fail-safe. */
import { env } from "cloudflare:workers";
import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { quotaObjectName } from "../../src/app/state/object-names";
import type { QuotaSpec, QuotaSync } from "../../src/core/routewise/wire";
import { providersClosedAfterEach, serversClosedAfterEach } from "../support/fleet";
import { frozenClock } from "../support/state";
import { SPEC_UNTOLD_MS } from "../../src/core/state/untold";

const providers = providersClosedAfterEach();
const servers = serversClosedAfterEach();
const stub = () => env.PROVIDER_QUOTA.getByName(quotaObjectName(`t-${crypto.randomUUID()}`));
const spec = (url: string, window_s = 10): QuotaSpec => ({
  id: "q",
  version: "v1",
  limit: 1_000,
  unit: "tokens",
  source: { url: `${url}/usage`, auth: undefined, used_path: "data.used", limit_path: "data.limit", reset_path: "data.reset_at", window: "fixed", window_s, poll_s: 60, timeout_ms: 5_000, stale_after_s: 300 },
});

/** An isolate's exchange with the quota: `used` units in batch `seq` (0: no batch). */
const sync = (url: string, seq = 0, used = 0, isolate = "i"): QuotaSync => ({ isolate, spec: spec(url), batches: seq === 0 ? [] : [{ seq, used }] });

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
    const first = await quota.sync(sync(provider!.url));
    expect(first).toMatchObject({ remaining: 900, limit: 1_000, failSafe: null });
    const resetAt = first.resetAt!;
    expect(resetAt).toBeGreaterThan(clock.now);

    expect((await quota.sync(sync(provider!.url, 1, 300))).remaining).toBe(600);
    clock.advance(resetAt - clock.now + 1); // just past the reset, no poll since
    const after = await quota.snapshot();
    expect(after.remaining).toBe(1_000);
    expect(after.resetAt).toBe(resetAt + 10_000); // the next reset, not one in the past
    expect((await quota.sync(sync(provider!.url, 2, 50))).remaining).toBe(950);
  });

  it("stops polling (with its credential) once no config or isolate has named it for SPEC_UNTOLD_MS, and polls again when named", async () => {
    clock = frozenClock();
    const [provider] = await providers([{ quotaLimit: 1_000, quotaWindowMs: 10_000 }], "quntold");
    const quota = stub();
    const polls = async () => (await provider!.stats()).byPath["/usage"] ?? 0;
    await quota.adopt(spec(provider!.url)); // the cron or a publish: the first poll at once
    expect(await polls()).toBe(1);
    expect(await runDurableObjectAlarm(quota)).toBe(true);
    expect(await polls()).toBe(2);
    clock.advance(SPEC_UNTOLD_MS + 1); // the config dropped it: no cron names it, no isolate routes to it
    expect(await runDurableObjectAlarm(quota)).toBe(true);
    expect(await polls(), "no poll once untold").toBe(2);
    expect(await runDurableObjectAlarm(quota), "and no alarm armed again").toBe(false);
    await quota.adopt(spec(provider!.url)); // named again
    expect(await runDurableObjectAlarm(quota)).toBe(true);
    expect(await polls()).toBe(3);
  });

  it("still says why its last poll failed after a restart between polls", async () => {
    const [provider] = await providers([{ quotaLimit: 1_000, usageDown: true }], "qerr");
    const quota = stub();
    expect((await quota.sync(sync(provider!.url))).lastError).toBe("usage API answered HTTP 503");
    await evictDurableObject(quota);
    expect((await quota.snapshot()).lastError).toBe("usage API answered HTTP 503");
  });

  it("fails safe until its first good poll, and says why the poll failed", async () => {
    const [provider] = await providers([{ quotaLimit: 1_000, usageDown: true }], "qdown");
    const state = await stub().sync(sync(provider!.url));
    expect(state).toMatchObject({ remaining: 0, failSafe: "never_polled", polledAt: null });
    expect(state.lastError).toBe("usage API answered HTTP 503");
  });

  it("reads a usage answer without the number it needs as a failed poll, naming the path", async () => {
    const [provider] = await providers([{ quotaLimit: 1_000 }], "qpath");
    const bad = { ...spec(provider!.url), source: { ...spec(provider!.url).source, used_path: "data.spent" } };
    const state = await stub().sync({ isolate: "i", spec: bad, batches: [] });
    expect(state.failSafe).toBe("never_polled");
    expect(state.lastError).toContain('used_path "data.spent"');
  });

  it("reads a number written as a decimal string, and a blank or hex string as no number (a failed poll, not 0 used)", async () => {
    const answer = (used: unknown) => ({ data: { used, limit: 1_000, reset_at: Math.floor(Date.now() / 1000) + 5 } });
    const [decimal, blank, space, hex] = await servers([{ usage: answer("250") }, { usage: answer("") }, { usage: answer(" ") }, { usage: answer("0x10") }], "qstr");
    expect(await stub().sync(sync(decimal!.url))).toMatchObject({ remaining: 750, failSafe: null });
    for (const server of [blank!, space!, hex!]) {
      const state = await stub().sync(sync(server.url));
      expect(state.failSafe).toBe("never_polled");
      expect(state.lastError).toContain('used_path "data.used"');
    }
  });

  it("takes a batch's units off once when its answer was lost and it is sent again, before and after a restart", async () => {
    clock = frozenClock();
    const [provider] = await providers([{ quotaLimit: 1_000, quotaWindowMs: 10_000 }], "qdup"); // the spec's window_s: a reset further ahead is not believed
    const quota = stub();
    expect((await quota.sync(sync(provider!.url))).remaining).toBe(1_000);
    await quota.sync(sync(provider!.url, 1, 300)); // its answer is lost
    const resent = await quota.sync(sync(provider!.url, 1, 300));
    expect(resent).toMatchObject({ remaining: 700, acked: 1 });
    expect((await quota.sync({ isolate: "i", spec: spec(provider!.url), batches: [{ seq: 1, used: 300 }, { seq: 2, used: 50 }] })).remaining).toBe(650);
    // The units and the applied seq were stored in one put: after a restart the resend takes nothing off.
    await evictDurableObject(quota);
    const afterRestart = await quota.sync({ isolate: "i", spec: spec(provider!.url), batches: [{ seq: 2, used: 50 }] });
    expect(afterRestart).toMatchObject({ remaining: 650, acked: 2 });
    // Another isolate's batch 1 is its own.
    expect((await quota.sync(sync(provider!.url, 1, 100, "j"))).remaining).toBe(550);
  });

  it("keeps its exhaustion counts across a restart, and does not count the exhaustion it restarted in again", async () => {
    clock = frozenClock();
    const [provider] = await providers([{ quotaLimit: 1_000, quotaWindowMs: 10_000 }], "qexh");
    const quota = stub();
    const { resetAt } = await quota.sync(sync(provider!.url));
    expect((await quota.sync(sync(provider!.url, 1, 1_000))).exhaustions).toEqual({ used_up: 1, fail_safe: 0 });
    await evictDurableObject(quota);
    // Still used up after the restart: the same exhaustion, counted once.
    expect(await quota.snapshot()).toMatchObject({ remaining: 0, exhaustions: { used_up: 1, fail_safe: 0 } });
    // A new window makes it usable; using it up again is a second exhaustion, which a restart keeps too.
    clock.advance(resetAt! - clock.now + 1); // just past the window's reset, as the usage API gave it
    expect((await quota.snapshot()).remaining).toBe(1_000);
    expect((await quota.sync(sync(provider!.url, 2, 1_000))).exhaustions).toEqual({ used_up: 2, fail_safe: 0 });
    await evictDurableObject(quota);
    expect((await quota.snapshot()).exhaustions).toEqual({ used_up: 2, fail_safe: 0 });
  });
});
