/**
 * The attempt engine's edges, through the real Worker: a client that leaves before the
 * response starts ends the exchange there (the upstream call is aborted, no other
 * replica is tried, and the attempt says nothing about the replica), and the request's
 * own deadline is told apart from a slow replica.
 */
import { describe, expect, it } from "vitest";
import { chatRequests as modelRequests, serversClosedAfterEach } from "../support/fleet";
import { chat, openAIErrorOf, publish, routerFetch } from "../support/router";
import { metricsText, metricValue, poolAfter, statefulConfig } from "../support/state";

const servers = serversClosedAfterEach();

describe("a client that leaves before response headers", () => {
  it("aborts the upstream call, tries no other replica, and counts the attempt as neutral", async () => {
    const [one, two] = await servers([{ hang: true }, { hang: true }], "gone-");
    const config = statefulConfig({
      model: `gone-${crypto.randomUUID().slice(0, 8)}`,
      replicas: [{ id: "one", url: one!.url }, { id: "two", url: two!.url }],
      routing: "{ affinity: { enabled: false }, try_timeout_ms: 20000, deadline_ms: 30000 }",
      poolExtra: "circuit: { consecutive_failures: 1 }", // one failure would open it: a neutral attempt must not
    });
    await publish(config.yaml);

    const left = new AbortController();
    const pending = routerFetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: config.model, messages: [] }),
      signal: left.signal,
    });
    // Whichever replica came first has the request; then the client goes.
    await expect.poll(async () => (await modelRequests(one!)) + (await modelRequests(two!)), { timeout: 5_000, interval: 10 }).toBe(1);
    left.abort();
    await expect(pending).rejects.toThrow();

    const snap = await poolAfter(config.pool, 1);
    const tried = (await modelRequests(one!)) === 1 ? one! : two!;
    await expect.poll(async () => (await tried.stats()).aborted, { timeout: 5_000, interval: 10 }).toBe(1); // the upstream call was cut
    expect((await modelRequests(one!)) + (await modelRequests(two!))).toBe(1); // and nothing else was tried
    expect(snap.replicas.every((r) => r.circuit === "closed")).toBe(true);
    const text = await metricsText();
    expect(metricValue(text, "switchyard_attempts_total", { pool: config.pool, verdict: "neutral" })).toBe(1);
    expect(metricValue(text, "switchyard_attempts_total", { pool: config.pool, verdict: "failure" })).toBe(0);
    expect(metricValue(text, "switchyard_requests_total", { pool: config.pool, status: "499" })).toBe(1);
  }, 20_000);
});

describe("the request deadline", () => {
  it("cutting the wait for headers is 504 deadline_exceeded, not a slow replica's upstream_timeout", async () => {
    // Both replicas answer 503 after 250 ms: the second try starts with 150 ms of the
    // 400 ms deadline left, less than its 300 ms try timeout, so the deadline cuts it.
    const [a, b] = await servers([{ latencyMs: 250, status: 503 }, { latencyMs: 250, status: 503 }], "deadline-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }, { id: "b", url: b!.url }], routing: "{ shared_state: false, try_timeout_ms: 300, deadline_ms: 400 }" });
    await publish(config.yaml);
    const res = await chat(config.model);
    expect(res.status).toBe(504);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "deadline_exceeded", message: expect.stringContaining("deadline") });
  });

  it("a try that times out and leaves no time for another is also deadline_exceeded", async () => {
    const [a, b] = await servers([{ latencyMs: 2_000 }, { latencyMs: 2_000 }], "deadline2-");
    const config = statefulConfig({ replicas: [{ id: "a", url: a!.url }, { id: "b", url: b!.url }], routing: "{ shared_state: false, try_timeout_ms: 300, deadline_ms: 300 }" });
    await publish(config.yaml);
    const res = await chat(config.model);
    expect(res.status).toBe(504);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "deadline_exceeded" });
  });

  it("a replica slower than try_timeout_ms with time left over is upstream_timeout", async () => {
    const [slow] = await servers([{ latencyMs: 2_000 }], "trytimeout-");
    const config = statefulConfig({ replicas: [{ id: "slow", url: slow!.url }], routing: "{ shared_state: false, try_timeout_ms: 200, deadline_ms: 10000 }" });
    await publish(config.yaml);
    const res = await chat(config.model);
    expect(res.status).toBe(504);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "upstream_timeout" });
  });
});
