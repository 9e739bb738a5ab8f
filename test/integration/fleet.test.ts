// The fake upstreams every router test leans on: check them directly with plain fetch
// from inside workerd before trusting them as test doubles.
import { afterEach, describe, expect, it } from "vitest";
import { deadUrl, spawnFleet, spawnServer, type FleetServer } from "../support/fleet";
import { readWithin, WaitTimeout } from "../support/timing";

const spawned: FleetServer[] = [];
afterEach(async () => {
  await Promise.all(spawned.splice(0).map((s) => s.close()));
});

async function server(...args: Parameters<typeof spawnServer>): Promise<FleetServer> {
  const s = await spawnServer(...args);
  spawned.push(s);
  return s;
}

function chat(url: string, body: Record<string, unknown> = {}, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m-1", messages: [{ role: "user", content: "hi" }], ...body }),
    ...init,
  });
}

/** Reads a body chunk by chunk; `error` is set when the connection breaks mid-way. */
async function readChunks(res: Response): Promise<{ chunks: string[]; error?: unknown }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  try {
    for (;;) {
      const { done, value } = await readWithin(reader, 10_000, "a fake server's body");
      if (done) return { chunks };
      chunks.push(decoder.decode(value, { stream: true }));
    }
  } catch (error) {
    if (error instanceof WaitTimeout) throw error; // a hang, not a broken connection
    return { chunks, error };
  }
}

describe("fake OpenAI server", () => {
  it("answers a chat completion echoing the model", async () => {
    const s = await server();
    const res = await chat(s.url, { model: "echo-me" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-fake-server")).toBe(s.id);
    const body = await res.json<{ model: string; object: string; choices: { message: { content: string } }[]; usage: unknown }>();
    expect(body.object).toBe("chat.completion");
    expect(body.model).toBe("echo-me");
    expect(body.choices[0]?.message.content).toBe(`Hello from ${s.id}`);
    expect(body.usage).toBeDefined();
  });

  it("streams SSE chunks ending in [DONE]", async () => {
    const s = await server({ streamChunks: 4, chunkIntervalMs: 20 });
    const res = await chat(s.url, { stream: true });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const { chunks, error } = await readChunks(res);
    expect(error).toBeUndefined();
    // The interval between events means they cannot all arrive in one read.
    expect(chunks.length).toBeGreaterThan(1);
    const events = chunks.join("").split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    type Chunk = { object: string; choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[] };
    const choices = events.slice(0, -1).map((e) => (JSON.parse(e.slice("data: ".length)) as Chunk).choices[0]!);
    expect(choices[0]?.delta.role).toBe("assistant");
    expect(choices.map((c) => c.delta.content ?? "").join("")).toBe("tok0 tok1 tok2 tok3 ");
    expect(choices.at(-1)?.finish_reason).toBe("stop");
  });

  it("delays headers by latencyMs", async () => {
    const latencyMs = 150;
    const s = await server({ latencyMs });
    const started = Date.now();
    const res = await chat(s.url);
    expect(Date.now() - started).toBeGreaterThanOrEqual(latencyMs - 5);
    await res.body?.cancel();
  });

  it("answers a forced status or failRate=1 with an OpenAI error body", async () => {
    const s = await server({ status: 503 });
    const forced = await chat(s.url);
    expect(forced.status).toBe(503);
    const err = await forced.json<{ error: { message: string; type: string; code: string } }>();
    expect(err.error).toMatchObject({ message: expect.any(String), type: expect.any(String) });

    await s.setBehaviour({ failRate: 1, failStatus: 429 });
    const failed = await chat(s.url);
    expect(failed.status).toBe(429);
    expect(await failed.json()).toHaveProperty("error.message");
  });

  it("hangs until the client gives up", async () => {
    const s = await server({ hang: true });
    await expect(chat(s.url, {}, { signal: AbortSignal.timeout(200) })).rejects.toThrow();
    // The server only learns of the abort when the connection closes, so poll briefly.
    await expect.poll(async () => (await s.stats()).aborted, { timeout: 2_000 }).toBe(1);
    expect((await s.stats()).inFlight).toBe(0);
  });

  it("cuts a stream mid-way with streamCutAfter", async () => {
    const s = await server({ streamChunks: 5, streamCutAfter: 2 });
    const res = await chat(s.url, { stream: true });
    // workerd surfaces the cut as a read error ("Network connection lost").
    const { chunks, error } = await readChunks(res);
    expect(error).toBeDefined();
    const text = chunks.join("");
    expect(text).toContain("tok1 ");
    expect(text).not.toContain("tok2 ");
    expect(text).not.toContain("[DONE]");
  });

  it("counts requests and records headers", async () => {
    const s = await server();
    await (await chat(s.url, {}, { headers: { "content-type": "application/json", "X-Test-Tag": "abc" } })).text();
    await (await fetch(`${s.url}/health`)).text();
    let stats = await s.stats();
    expect(stats.requests).toBe(2);
    expect(stats.byPath["/v1/chat/completions"]).toBe(1);
    expect(stats.byPath["/health"]).toBe(1);
    expect(stats.completed).toBe(2);
    expect(stats.inFlight).toBe(0);
    expect(stats.recent[0]?.headers["x-test-tag"]).toBe("abc");
    expect(JSON.parse(stats.recent[0]?.body ?? "{}").model).toBe("m-1");

    await s.reset();
    stats = await s.stats();
    expect(stats.requests).toBe(0);
    expect(stats.recent).toEqual([]);
  });

  it("keeps health independent of failures unless unhealthy", async () => {
    const s = await server({ status: 500, hang: true });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    await s.setBehaviour({ healthy: false });
    expect((await fetch(`${s.url}/health`)).status).toBe(503);
  });

  it("rejects malformed JSON with 400", async () => {
    const s = await server();
    const res = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", body: "{not json" });
    expect(res.status).toBe(400);
    expect(await res.json()).toHaveProperty("error.type", "invalid_request_error");
  });

  it("serves completions, embeddings and models", async () => {
    const s = await server();
    const post = <T>(path: string, body: unknown) =>
      fetch(`${s.url}${path}`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.json<T>());
    const completion = await post<{ choices: { text: string }[] }>("/v1/completions", { model: "c", prompt: "x" });
    expect(completion.choices[0]?.text).toBe(`Hello from ${s.id}`);
    const emb = await post<{ data: { object: string; index: number; embedding: number[] }[] }>("/v1/embeddings", {
      model: "e",
      input: ["a", "b"],
    });
    expect(emb.data).toHaveLength(2);
    expect(emb.data[1]).toMatchObject({ object: "embedding", index: 1 });
    expect(emb.data[0]?.embedding).toHaveLength(8);
    const models = await (await fetch(`${s.url}/v1/models`)).json<{ data: { id: string }[] }>();
    expect(models.data.map((m) => m.id)).toEqual(["fake-model"]);
  });

  it("gives every fleet member a distinct id and port", async () => {
    const fleet = await spawnFleet(3);
    spawned.push(...fleet);
    expect(new Set(fleet.map((s) => s.id)).size).toBe(3);
    expect(new Set(fleet.map((s) => s.url)).size).toBe(3);
  });

  it("hands out a dead port that refuses connections", async () => {
    const url = await deadUrl();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });
});
