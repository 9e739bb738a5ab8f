/** The affinity shard's rules, pure: a machine over a pin store kept in a Map. */
import { describe, expect, it } from "vitest";
import { refreshGranularityMs } from "../../src/core/affinity/pins";
import type { PinStore, StoredPin } from "../../src/core/affinity/shard-machine";
import { ShardMachine } from "../../src/core/affinity/shard-machine";
import type { PinClaim, ShardNews, ShardSync } from "../../src/core/affinity/wire";

/** The pins table, in memory; counts writes so a test can tell a slide that wrote from one that did not. */
class MapPinStore implements PinStore {
  pins = new Map<string, StoredPin & { model: string }>();
  writes = 0;
  get = (key: string, model: string) => {
    const pin = this.pins.get(`${key}|${model}`);
    return pin ? { pool: pin.pool, replica: pin.replica, expiresAt: pin.expiresAt } : null;
  };
  put = (key: string, model: string, pin: StoredPin) => {
    this.writes++;
    this.pins.set(`${key}|${model}`, { ...pin, model });
  };
  setExpiry = (key: string, model: string, expiresAt: number) => {
    this.writes++;
    const pin = this.pins.get(`${key}|${model}`);
    if (pin) pin.expiresAt = expiresAt;
  };
  delete = (key: string, model: string, replica?: string) => {
    const pin = this.pins.get(`${key}|${model}`);
    if (!pin || (replica !== undefined && pin.replica !== replica)) return false;
    return this.pins.delete(`${key}|${model}`);
  };
  deleteExpired = (now: number) => {
    const counts = new Map<string, number>();
    for (const [slot, pin] of this.pins) {
      if (pin.expiresAt > now) continue;
      this.pins.delete(slot);
      counts.set(pin.model, (counts.get(pin.model) ?? 0) + 1);
    }
    return counts;
  };
  minExpiry = () => (this.pins.size === 0 ? null : Math.min(...[...this.pins.values()].map((p) => p.expiresAt)));
  count = () => this.pins.size;
}

const TTL_MS = 300_000;
const claim = (proposal: string, extra: Partial<PinClaim> = {}): PinClaim => ({ key: "k", model: "m", pool: "p", ttlMs: TTL_MS, proposal, allowed: ["a", "b"], drop: null, ...extra });
const batch = (isolate: string, seq: number, news: Partial<ShardNews>): ShardSync => ({ isolate, batches: [{ seq, touches: [], drops: [], hits: {}, ...news }] });
/** The shard's event counts as {event: n} for model m. */
const events = (shard: ShardMachine) => Object.fromEntries(shard.snapshot().events.map((s) => [s.labels.event, s.value]));

describe("ShardMachine", () => {
  it("pins the first proposal and honours it for every later claim (a hit), whatever they propose", () => {
    const shard = new ShardMachine(new MapPinStore());
    expect(shard.claim(claim("a"), 1_000)).toEqual({ pin: { replica: "a", expiresAt: 1_000 + TTL_MS }, alarmBy: 1_000 + TTL_MS });
    expect(shard.claim(claim("b"), 2_000)).toEqual({ pin: { replica: "a", expiresAt: 1_000 + TTL_MS }, alarmBy: null });
    expect(events(shard)).toEqual({ miss: 1, created: 1, hit: 1 });
    expect(shard.snapshot().pins).toBe(1);
  });

  it("replaces a pin the caller may not use: another pool, or a replica not allowed", () => {
    const shard = new ShardMachine(new MapPinStore());
    shard.claim(claim("a"), 0);
    expect(shard.claim(claim("b", { allowed: ["b"] }), 1).pin.replica).toBe("b");
    expect(shard.claim(claim("a", { pool: "q" }), 2).pin.replica).toBe("a");
    expect(events(shard)).toEqual({ miss: 1, created: 3, dropped_unavailable: 2 });
  });

  it("drops a failed pin first (only if it still points at the failed replica), then claims afresh", () => {
    const shard = new ShardMachine(new MapPinStore());
    shard.claim(claim("a"), 0);
    expect(shard.claim(claim("b", { drop: "b" }), 1).pin.replica).toBe("a"); // points elsewhere: kept, a hit
    expect(shard.claim(claim("b", { drop: "a" }), 2).pin.replica).toBe("b");
    expect(events(shard)).toEqual({ miss: 2, created: 2, hit: 1, dropped_error: 1 });
  });

  it("treats a pin past its expiry as expired at a claim, then pins the proposal", () => {
    const shard = new ShardMachine(new MapPinStore());
    shard.claim(claim("a"), 0);
    expect(shard.claim(claim("b"), TTL_MS).pin).toEqual({ replica: "b", expiresAt: 2 * TTL_MS });
    expect(events(shard)).toEqual({ miss: 2, created: 2, expired: 1 });
  });

  it("slides a pin's expiry only once it has aged past the refresh granularity", () => {
    const store = new MapPinStore();
    const shard = new ShardMachine(store);
    const step = refreshGranularityMs(TTL_MS);
    shard.claim(claim("a"), 0);
    const written = store.writes;
    expect(shard.claim(claim("a"), step - 1).pin.expiresAt).toBe(TTL_MS); // too soon: not rewritten
    expect(store.writes).toBe(written);
    expect(shard.claim(claim("a"), step).pin.expiresAt).toBe(step + TTL_MS);
    expect(store.get("k", "m")!.expiresAt).toBe(step + TTL_MS);
    // A touch in a batch slides the same way, from its use (never later than now).
    const touch = (seq: number, usedAt: number, now: number) => shard.sync(batch("i", seq, { touches: [{ key: "k", model: "m", usedAt, ttlMs: TTL_MS }] }), now).pins[0]!.pin!.expiresAt;
    expect(touch(1, 2 * step - 1, 2 * step - 1)).toBe(step + TTL_MS);
    expect(touch(2, 10 * step, 2 * step)).toBe(2 * step + TTL_MS);
  });

  it("applies a resent batch once: its hits count once, its drops are not redone, its touches are answered as reads", () => {
    const shard = new ShardMachine(new MapPinStore());
    shard.claim(claim("a"), 0);
    const news = batch("i", 1, { hits: { m: 3 }, drops: [{ key: "k", model: "m", replica: "a" }], touches: [{ key: "k", model: "m", usedAt: 100_000, ttlMs: TTL_MS }] });
    expect(shard.sync(news, 100_000)).toEqual({ pins: [{ key: "k", model: "m", pin: null }], acked: 1 });
    // The answer was lost; meanwhile the client came back and was pinned to a again.
    shard.claim(claim("a"), 150_000);
    expect(shard.sync(news, 200_000)).toEqual({ pins: [{ key: "k", model: "m", pin: { replica: "a", expiresAt: 150_000 + TTL_MS } }], acked: 1 });
    expect(events(shard)).toEqual({ miss: 2, created: 2, hit: 3, dropped_error: 1 });
  });

  it("answers an expired pin as gone, and the sweep deletes and counts it, and names the next expiry", () => {
    const store = new MapPinStore();
    const shard = new ShardMachine(store);
    shard.claim(claim("a"), 0);
    shard.claim(claim("a", { key: "k2", ttlMs: 10_000 }), 0);
    expect(shard.sync(batch("i", 1, { touches: [{ key: "k2", model: "m", usedAt: null, ttlMs: 10_000 }] }), 10_000).pins[0]!.pin).toBeNull();
    expect(shard.sweep(10_000)).toEqual({ next: TTL_MS });
    expect(events(shard).expired).toBe(1);
    expect(shard.sweep(TTL_MS)).toEqual({ next: null });
    expect(shard.snapshot().pins).toBe(0);
  });
});
