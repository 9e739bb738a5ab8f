/**
 * The oracle hit rate (bench/quality/oracle.ts): hand-counted sequences, and the same
 * sequence sent to one fake replica whose cache never evicts, which must hit exactly as
 * often as the oracle says (the oracle claims to cut prompts as the replica does).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeVllm, type FakeVllmServer } from "../../tools/fakes/fake-vllm";
import { renderChat } from "../../tools/fakes/vllm/tokens";
import { oracleHitRate, oracleHits } from "../../bench/quality/oracle";
import { makeWorkload, requestsOf, type WorkloadSize } from "../../bench/quality/workloads";

const B = 4; // tokens a block: 16 bytes
const block = (ch: string) => ch.repeat(16);

describe("oracleHits", () => {
  it("counts every block seen before as a hit, except that the last prompt token is always computed", () => {
    const threeAndOne = block("a") + block("b") + block("c") + "."; // 13 tokens, 3 full blocks
    expect(oracleHits([threeAndOne, threeAndOne], B)).toEqual({ cached: 12, prompt: 26 });

    const threeExactly = block("a") + block("b") + block("c"); // 12 tokens: the third block holds the last token
    expect(oracleHits([threeExactly, threeExactly], B)).toEqual({ cached: 8, prompt: 24 });
  });

  it("matches the longest common prefix only: a block after a different one is a miss", () => {
    expect(oracleHits([block("a") + block("b") + "x", block("a") + block("c") + "y"], B).cached).toBe(4);
    expect(oracleHits([block("a") + block("b") + "x", block("c") + block("b") + "y"], B).cached).toBe(0);
  });

  it("remembers every block of every earlier prompt, not only the last one's", () => {
    const prompts = [block("a") + block("b") + ".", block("c") + ".", block("a") + block("b") + block("d") + "."];
    expect(oracleHits(prompts, B)).toEqual({ cached: 8, prompt: 9 + 5 + 13 });
  });

  it("is 0 for an empty sequence and for prompts shorter than a block", () => {
    expect(oracleHits([], B)).toEqual({ cached: 0, prompt: 0 });
    expect(oracleHits(["short", "short"], B).cached).toBe(0);
  });
});

describe("oracleHitRate against a fake replica that never evicts", () => {
  let server: FakeVllmServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const size: WorkloadSize = { requests: 40, tenants: 3, systemChars: 600, questionChars: 60, turnsPerSession: 4, outputTokens: 2 };

  for (const name of ["shared", "multiturn", "hot"] as const) {
    it(`${name}: one request at a time, the replica's cached tokens are the oracle's`, async () => {
      server = await startFakeVllm({ blockSize: 16, numGpuBlocks: 1_000_000, prefillMsPerToken: 0, decodeMsPerToken: 0, decodeMsPerExtraSeq: 0, model: "m" });
      const requests = requestsOf(makeWorkload(name, 7, size));
      let cached = 0;
      let prompt = 0;
      for (const r of requests) {
        const res = await fetch(`${server.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", messages: r.messages, max_tokens: r.maxTokens }),
        });
        const { usage } = (await res.json()) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } };
        cached += usage.prompt_tokens_details.cached_tokens;
        prompt += usage.prompt_tokens;
      }
      expect(prompt).toBe(oracleHits(requests.map((r) => renderChat(r.messages)), 16).prompt);
      expect(cached / prompt).toBeCloseTo(oracleHitRate(requests, 16), 12);
      expect(cached).toBeGreaterThan(0);
    });
  }
});
