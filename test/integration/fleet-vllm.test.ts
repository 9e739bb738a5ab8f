// Fake vLLM replicas spawned and steered from inside workerd through fleet control, as
// routing tests and benchmarks will: check the client before trusting it.
import { describe, expect, it } from "vitest";
import { spawnVllm, vllmClosedAfterEach, type VllmStats } from "../support/fleet";

const replicas = vllmClosedAfterEach();

function chat(url: string, model: string, content: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "system", content: "Be brief. ".repeat(20) }, { role: "user", content }], max_tokens: 2 }),
  });
}

describe("fleet control: fake vLLM replicas", () => {
  it("spawns replicas with options, and their stats show each request's cached tokens and timings", async () => {
    const [a, b] = await replicas(2, { model: "m-vllm", blockSize: 4, decodeMsPerToken: 0 });
    expect(a!.url).not.toBe(b!.url);
    for (const question of ["one?", "two?"]) {
      const res = await chat(a!.url, "m-vllm", question);
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
    const stats: VllmStats = await a!.stats();
    expect(stats.options).toMatchObject({ model: "m-vllm", blockSize: 4 });
    const [first, second] = stats.records;
    expect(first).toMatchObject({ seq: 1, cachedTokens: 0, outcome: "completed", completionTokens: 2 });
    // The shared system prompt: every full block before the first differing byte is reused.
    expect(second!.cachedTokens).toBeGreaterThan(40);
    expect(second!.uncachedTokens).toBe(second!.promptTokens - second!.cachedTokens);
    expect(second!.firstTokenAt).toBeGreaterThanOrEqual(second!.startAt!);
    expect(stats.prefixCache.hitTokens).toBe(second!.cachedTokens);
    expect((await b!.stats()).records).toEqual([]);

    await a!.reset();
    expect((await a!.stats()).records).toEqual([]);
  });

  it("tunes a running replica, and refuses bad options and tunings with the field's name", async () => {
    const [r] = await replicas(1);
    await r!.tune({ healthy: false });
    expect((await fetch(`${r!.url}/health`)).status).toBe(503);
    await expect(r!.tune({ prefillMsPerToken: -1 })).rejects.toThrow(/400.*prefillMsPerToken/);
    await expect(spawnVllm({ numGpuBlocks: 0 })).rejects.toThrow(/400.*numGpuBlocks/);
  });

  it("closes a replica: its port stops answering", async () => {
    const r = await spawnVllm();
    expect((await fetch(`${r.url}/health`)).status).toBe(200);
    await r.close();
    await expect(fetch(`${r.url}/health`)).rejects.toThrow();
    await r.close(); // idempotent
  });
});
