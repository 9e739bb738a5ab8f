/** The workload generators (bench/quality/workloads.ts): deterministic, sized as asked, shaped as named. */
import { describe, expect, it } from "vitest";
import { renderChat } from "../../tools/fakes/vllm/tokens";
import { WORKLOAD_NAMES, makeWorkload, prng, requestsOf, type WorkloadSize } from "../../bench/quality/workloads";

const size: WorkloadSize = { requests: 100, tenants: 8, systemChars: 500, questionChars: 80, turnsPerSession: 5, outputTokens: 8 };

describe("workloads", () => {
  for (const name of WORKLOAD_NAMES) {
    it(`${name}: the same seed gives the same requests, another seed others, and exactly the requests asked for`, () => {
      expect(makeWorkload(name, 3, size)).toEqual(makeWorkload(name, 3, size));
      expect(JSON.stringify(makeWorkload(name, 4, size))).not.toBe(JSON.stringify(makeWorkload(name, 3, size)));
      expect(requestsOf(makeWorkload(name, 3, size))).toHaveLength(100);
      expect(requestsOf(makeWorkload(name, 3, { ...size, requests: 7 }))).toHaveLength(7);
      for (const r of requestsOf(makeWorkload(name, 3, size))) expect(r.maxTokens).toBe(8);
    });
  }

  it("burst: every request the same system prompt and a question no other request asks", () => {
    const requests = requestsOf(makeWorkload("burst", 1, size));
    expect(new Set(requests.map((r) => r.messages[0]!.content)).size).toBe(1);
    expect(requests[0]!.messages[0]!.content.length).toBeGreaterThanOrEqual(500);
    expect(new Set(requests.map((r) => r.messages[1]!.content)).size).toBe(100);
  });

  it("prng: the same seed gives the same stream in [0, 1)", () => {
    const a = prng(42);
    const b = prng(42);
    const draws = Array.from({ length: 1000 }, () => a());
    expect(draws).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
  });

  it("shared: every request is a tenant's system prompt (one of `tenants`) and a question no other request asks", () => {
    const requests = requestsOf(makeWorkload("shared", 1, size));
    const systems = new Set(requests.map((r) => r.messages[0]!.content));
    expect(systems.size).toBeLessThanOrEqual(8);
    expect(systems.size).toBeGreaterThan(4);
    for (const s of systems) expect(s.length).toBeGreaterThanOrEqual(500);
    expect(new Set(requests.map((r) => r.messages[1]!.content)).size).toBe(100);
  });

  it("multiturn: each turn resends the previous turn's messages and an answer, then adds one question", () => {
    const w = makeWorkload("multiturn", 1, size);
    expect(w.conversations).toHaveLength(20);
    for (const c of w.conversations) {
      expect(c.turns).toHaveLength(5);
      c.turns.forEach((turn, k) => {
        expect(turn.messages).toHaveLength(2 + 2 * k);
        if (k > 0) {
          const previous = c.turns[k - 1]!.messages;
          expect(turn.messages.slice(0, previous.length)).toEqual(previous);
          expect(turn.messages.map((m) => m.role).slice(previous.length)).toEqual(["assistant", "user"]);
          expect(renderChat(turn.messages).length).toBeGreaterThan(renderChat(previous).length);
        }
      });
    }
  });

  it("hot: tenant 0 sends about half the requests with a prompt twice as long", () => {
    const w = makeWorkload("hot", 1, { ...size, requests: 4000 });
    const hot = w.conversations.filter((c) => c.tag === "tenant-0");
    // Binomial(4000, 0.5): sd ~0.008, so ±0.05 is over 6 sd (miss rate < 1e-9).
    expect(hot.length / 4000).toBeGreaterThan(0.45);
    expect(hot.length / 4000).toBeLessThan(0.55);
    const other = w.conversations.find((c) => c.tag !== "tenant-0")!;
    expect(hot[0]!.turns[0]!.messages[0]!.content.length).toBeGreaterThan(1.8 * other.turns[0]!.messages[0]!.content.length);
    expect(new Set(w.conversations.map((c) => c.tag)).size).toBe(8);
  });

  it("uniform: no two prompts share even their first 64 bytes (one KV block of 16 tokens)", () => {
    const prompts = requestsOf(makeWorkload("uniform", 1, size)).map((r) => renderChat(r.messages).slice(0, 64));
    expect(new Set(prompts).size).toBe(100);
  });
});
