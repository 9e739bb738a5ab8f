import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/platform/surfaces/app";
import { ConfigSource } from "../../src/platform/config-source";
import { IsolateState } from "../../src/app/state/isolate-state";
import type { FleetServer } from "../support/fleet";
import { deadUrl, spawnServer } from "../support/fleet";
import { chat, openAIErrorOf, poolConfig, post, publish } from "../support/router";
import { CHI2_CRITICAL_1E4, chiSquare } from "../support/statistics";
import { readToEnd, readWithin } from "../support/timing";

/** These tests are about the proxy itself: routing on weights alone, no pins or circuits carried between tests. */
const stateless = (replicas: Parameters<typeof poolConfig>[0], routing = "") =>
  poolConfig(replicas, `routing: { shared_state: false${routing ? `, ${routing}` : ""} }\n`);

const spawned: FleetServer[] = [];
async function server(behaviour: Parameters<typeof spawnServer>[0] = {}, id = "fake"): Promise<FleetServer> {
  const s = await spawnServer(behaviour, id);
  spawned.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(spawned.splice(0).map((s) => s.close()));
});

const replyOf = async (res: Response) => ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;

describe("weighted split", () => {
  // Statistical, over HTTP: 1,000 requests (about 2.5 s), false failure 1e-4 (chi-square,
  // 1 df, p = 1e-4). What 1,000 requests can tell apart is limited (test/support/statistics.ts
  // missRate, checked against the exact binomial): a router that ignores weights (50/50)
  // passes with probability 0.6%, one 12 points off (48/52) with < 1e-4, swapped weights
  // (40/60) never; a 55/45 router passes 74% of the time, so this test cannot catch it.
  // Telling 55/45 from 60/40 at a 1e-4 miss rate takes about 5,650 requests; that is the
  // job of the 20,000-draw unit test of pickWeightedIndex (test/unit/weighted.test.ts),
  // and the exact mapping of draws to replicas through this whole path is checked
  // deterministically by the scripted test below.
  it("sends 60/40 within a chi-square bound over 1,000 requests", async () => {
    const [a, b] = [await server(), await server()];
    await publish(stateless([{ id: "a", url: a.url, weight: 60 }, { id: "b", url: b.url, weight: 40 }]));
    const served = { a: 0, b: 0 };
    const total = 1000;
    for (let batch = 0; batch < total / 50; batch++) {
      const responses = await Promise.all(Array.from({ length: 50 }, () => chat("m")));
      for (const res of responses) {
        expect(res.status).toBe(200);
        served[res.headers.get("x-switchyard-replica") as "a" | "b"]++;
        await res.arrayBuffer();
      }
    }
    expect(chiSquare([served.a, served.b], [0.6, 0.4], total), `a=${served.a} b=${served.b}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
    expect((await a.stats()).byPath["/v1/chat/completions"]).toBe(served.a);
  });

  it("maps each draw onto the replica its weight covers, through the whole router (scripted draws)", async () => {
    const [a, b] = [await server(), await server()];
    await publish(stateless([{ id: "a", url: a.url, weight: 60 }, { id: "b", url: b.url, weight: 40 }]));
    // An isolate of the same app whose random source replays these draws: uniformInt(100)
    // maps a draw below the rejection limit to draw % 100, so 0..59 is a and 60..99 is b.
    const queue: number[] = [];
    const random = {
      uint32() {
        const draw = queue.shift();
        if (draw === undefined) throw new Error("the router drew more than the scripted draws");
        return draw;
      },
    };
    const state = new IsolateState();
    const app = createApp({ configSource: new ConfigSource(), random, state });
    try {
      for (const [draw, replica] of [[0, "a"], [59, "a"], [60, "b"], [99, "b"], [2 ** 32 - 97, "b"]] as const) {
        queue.push(draw);
        const ctx = createExecutionContext();
        const res = await app.fetch(
          new Request("https://router.test/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", messages: [] }) }),
          env,
          ctx,
        );
        expect(res.status, `draw ${draw}`).toBe(200);
        expect(res.headers.get("x-switchyard-replica"), `draw ${draw}`).toBe(replica);
        await res.arrayBuffer();
        await waitOnExecutionContext(ctx);
        expect(queue, `draw ${draw} was used, and it was the only one`).toEqual([]);
      }
    } finally {
      state.dispose();
    }
  });

  it("never sends to a weight-0 replica, not even as a fallback", async () => {
    const [live, zero] = [await server({ status: 500 }), await server()];
    await publish(stateless([{ id: "live", url: live.url, weight: 1 }, { id: "zero", url: zero.url, weight: 0 }]));
    const res = await chat("m");
    expect(res.status).toBe(502);
    expect((await zero.stats()).requests).toBe(0);
  });

  it("answers 503 fast when every weight is 0", async () => {
    const s = await server();
    await publish(stateless([{ id: "z", url: s.url, weight: 0 }]));
    const res = await chat("m");
    expect(res.status).toBe(503);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "no_available_replica" });
  });
});

describe("fallback", () => {
  it("retries the next candidate after a configured status and reports the attempts", async () => {
    const [bad, good] = [await server({ status: 503 }, "bad"), await server({}, "good")];
    await publish(stateless([{ id: "bad", url: bad.url, weight: 1 }, { id: "good", url: good.url, weight: 1 }]));
    const attempts = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const res = await chat("m");
      expect(res.status).toBe(200);
      expect(res.headers.get("x-switchyard-replica")).toBe("good");
      attempts.add(res.headers.get("x-switchyard-attempts")!);
      expect(await replyOf(res)).toBe(`Hello from ${good.id}`);
    }
    expect(attempts).toEqual(new Set(["1", "2"])); // bad first half the time: P(never in 40) = 2^-40
    expect((await bad.stats()).byPath["/v1/chat/completions"]).toBeGreaterThan(0);
  });

  it("retries after a connect error", async () => {
    const good = await server();
    await publish(stateless([{ id: "dead", url: await deadUrl(), weight: 1000 }, { id: "good", url: good.url, weight: 1 }]));
    const res = await chat("m");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-replica")).toBe("good");
  });

  // Retried: its try timeout is wall-clock, and a full suite on 2 shared cores answered 504 once in CI; a router that does not retry fails every try.
  it("retries after the per-try timeout", { retry: 2 }, async () => {
    const [hung, good] = [await server({ hang: true }), await server()];
    await publish(stateless([{ id: "hung", url: hung.url, weight: 1000 }, { id: "good", url: good.url, weight: 1 }], "try_timeout_ms: 200"));
    const started = Date.now();
    const res = await chat("m");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-replica")).toBe("good");
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it("passes a status that is not retried straight through, without trying others", async () => {
    const [teapot, other] = [await server({ status: 400 }), await server()];
    await publish(stateless([{ id: "t", url: teapot.url, weight: 1000 }, { id: "o", url: other.url, weight: 1 }]));
    let sawTeapot = false;
    for (let i = 0; i < 5 && !sawTeapot; i++) {
      const res = await chat("m");
      if (res.headers.get("x-switchyard-replica") === "t") {
        sawTeapot = true;
        expect(res.status).toBe(400);
        expect(res.headers.get("x-switchyard-attempts")).toBe("1");
      }
      await res.arrayBuffer();
    }
    expect(sawTeapot).toBe(true);
  });

  it("honours a custom retry list", async () => {
    const [busy, good] = [await server({ status: 429 }), await server()];
    await publish(stateless([{ id: "busy", url: busy.url, weight: 1000 }, { id: "good", url: good.url, weight: 1 }], "retry_on: [500]"));
    let passedThrough = 0;
    for (let i = 0; i < 5; i++) {
      const res = await chat("m");
      if (res.status === 429) passedThrough++;
      await res.arrayBuffer();
    }
    expect(passedThrough).toBeGreaterThan(0); // 429 is no longer retried
  });

  it("stops at max_attempts", async () => {
    const servers = [await server({ status: 500 }), await server({ status: 500 }), await server({ status: 500 })];
    await publish(stateless(servers.map((s, i) => ({ id: `r${i}`, url: s.url })), "max_attempts: 2"));
    const res = await chat("m");
    expect(res.status).toBe(502);
    expect(res.headers.get("x-switchyard-attempts")).toBe("2");
    const counts = await Promise.all(servers.map(async (s) => (await s.stats()).requests));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(2);
  });
});

describe("when every candidate fails", () => {
  it("502 naming the last replica's status", async () => {
    const [a, b] = [await server({ status: 500 }), await server({ status: 502 })];
    await publish(stateless([{ id: "a", url: a.url }, { id: "b", url: b.url }]));
    const res = await chat("m");
    expect(res.status).toBe(502);
    const error = await openAIErrorOf(res);
    expect(error.code).toBe("upstream_error");
    expect(error.message).toMatch(/after 2 attempts; last: replica "[ab]" answered 50[02]/);
  });

  it("503 when the last cause is overload (429/503)", async () => {
    const s = await server({ status: 429 });
    await publish(stateless([{ id: "a", url: s.url }]));
    const res = await chat("m");
    expect(res.status).toBe(503);
    expect((await openAIErrorOf(res)).message).toContain('replica "a" answered 429');
  });

  it("502 when nothing can be reached", async () => {
    await publish(stateless([{ id: "gone", url: await deadUrl() }]));
    const res = await chat("m");
    expect(res.status).toBe(502);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "upstream_unreachable" });
    expect((await openAIErrorOf(await chat("m"))).message).toContain('replica "gone" could not be reached');
  });

  it("504 when every try times out", async () => {
    const s = await server({ hang: true });
    await publish(stateless([{ id: "h", url: s.url }], "try_timeout_ms: 150"));
    const res = await chat("m");
    expect(res.status).toBe(504);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "upstream_timeout" });
  });

  it("504 at the total deadline, without starting tries it cannot finish", async () => {
    const servers = [await server({ hang: true }), await server({ hang: true }), await server({ hang: true })];
    await publish(stateless(servers.map((s, i) => ({ id: `h${i}`, url: s.url })), "try_timeout_ms: 200, deadline_ms: 300"));
    const started = Date.now();
    const res = await chat("m");
    const elapsed = Date.now() - started;
    expect(res.status).toBe(504);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2000); // three full tries would be 600 ms; the deadline cut it at ~300
    expect(Number(res.headers.get("x-switchyard-attempts"))).toBe(2);
  });
});

describe("upstream request", () => {
  it("injects the replica's API key, strips router credentials and hop-by-hop headers, keeps the rest", async () => {
    const s = await server();
    await publish(stateless([{ id: "k", url: s.url, api_key: "sk-upstream" }]));
    const res = await post("/v1/chat/completions", { model: "m", messages: [] }, {
      authorization: "Bearer sk-client",
      "x-route-pin": "other",
      "x-switchyard-admin-token": "nope",
      "x-request-id": "req-7",
      connection: "close",
    });
    expect(res.status).toBe(200);
    const [recorded] = (await s.stats()).recent;
    expect(recorded!.headers.authorization).toBe("Bearer sk-upstream");
    expect(recorded!.headers["x-request-id"]).toBe("req-7");
    expect(recorded!.headers["x-route-pin"]).toBeUndefined();
    expect(recorded!.headers["x-switchyard-admin-token"]).toBeUndefined();
    expect(JSON.parse(recorded!.body)).toEqual({ model: "m", messages: [] });
  });

  it("rewrites the model for the upstream when upstream_model is set", async () => {
    const s = await server();
    await publish(`models:\n  public: { pool: p, upstream_model: org/private-7b }\npools:\n  p:\n    replicas: [{ id: r, url: "${s.url}/v1" }]\n`);
    const res = await chat("public");
    expect(res.status).toBe(200);
    const [recorded] = (await s.stats()).recent;
    expect(recorded!.path).toBe("/v1/chat/completions"); // base written with /v1 is not doubled
    expect(JSON.parse(recorded!.body).model).toBe("org/private-7b");
  });
});

describe("streaming", () => {
  it("passes SSE through without buffering: the first chunk arrives long before the last", async () => {
    const s = await server({ streamChunks: 4, chunkIntervalMs: 250 });
    await publish(stateless([{ id: "s", url: s.url }]));
    const started = Date.now();
    const res = await chat("m", { stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const first = await readWithin(reader, 10_000, "the first SSE chunk");
    const firstAt = Date.now() - started;
    let text = decoder.decode(first.value, { stream: true });
    for (;;) {
      const { done, value } = await readWithin(reader, 10_000, "the rest of the SSE stream");
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const totalAt = Date.now() - started;
    expect(firstAt).toBeLessThan(totalAt - 500); // four 250 ms gaps follow the first chunk
    expect(text).toContain("data: [DONE]");
    expect(text.match(/^data: /gm)!.length).toBeGreaterThanOrEqual(5);
  });

  it("ends a stream that is still flowing when the total deadline passes", async () => {
    const s = await server({ streamChunks: 20, chunkIntervalMs: 100 });
    await publish(stateless([{ id: "slow", url: s.url }], "try_timeout_ms: 400, deadline_ms: 500"));
    const started = Date.now();
    const res = await chat("m", { stream: true });
    expect(res.status).toBe(200);
    const { text } = await readToEnd(res, 10_000, "the stream cut by the deadline");
    const elapsed = Date.now() - started;
    expect(text).not.toContain("[DONE]"); // the full stream would take 2 s
    expect(elapsed).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(1500);
  });

  it("never retries once bytes reached the client: a stream cut mid-way ends the response", async () => {
    const [cut, other] = [await server({ streamChunks: 5, streamCutAfter: 2, chunkIntervalMs: 20 }), await server()];
    await publish(stateless([{ id: "cut", url: cut.url, weight: 1000 }, { id: "other", url: other.url, weight: 1 }]));
    let sawCut = false;
    for (let i = 0; i < 5 && !sawCut; i++) {
      const res = await chat("m", { stream: true });
      if (res.headers.get("x-switchyard-replica") !== "cut") {
        await res.arrayBuffer();
        continue;
      }
      sawCut = true;
      expect(res.status).toBe(200);
      const { text } = await readToEnd(res, 10_000, "the stream cut by its upstream");
      expect(text).not.toContain("[DONE]");
    }
    expect(sawCut).toBe(true);
    expect((await other.stats()).requests).toBeLessThanOrEqual(4); // only the non-cut picks, never a retry of the cut stream
  });
});
