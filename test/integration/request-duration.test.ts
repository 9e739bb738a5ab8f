/**
 * `switchyard_request_duration_seconds_sum`: every isolate reports how long its routed
 * requests took, from arrival to the answer's last byte, and the pool's object adds them
 * up; ÷ `switchyard_requests_total` is the mean latency per model (the dashboard's chart).
 * A RouteWise model's are `switchyard_routewise_request_duration_seconds_sum` and
 * `switchyard_routewise_model_requests_total`, added up by its envelope object; a graph
 * model's `switchyard_graph_request_duration_seconds_sum` and
 * `switchyard_graph_requests_total`, added up by the graph's counters object.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { serversClosedAfterEach, type FleetServer } from "../support/fleet";
import { chat, post, publish } from "../support/router";
import { metricsText, metricValue, poolAfter, statefulConfig } from "../support/state";

const servers = serversClosedAfterEach();
const LATENCY_MS = 120; // the fake upstream's delay before it answers: every request takes at least this
const REQUESTS = 5;

/** REQUESTS answered requests to `model`, then one after its upstream starts failing (503); the failed status and the run's wall time in seconds. */
async function servedThenFailed(model: string, upstream: FleetServer): Promise<{ failed: { status: number }; wall: number }> {
  const started = Date.now();
  for (let i = 0; i < REQUESTS; i++) {
    const res = await chat(model);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
  }
  await upstream.setBehaviour({ status: 503 });
  const failed = await chat(model);
  expect(failed.status).toBeGreaterThanOrEqual(500);
  await failed.arrayBuffer();
  return { failed, wall: (Date.now() - started) / 1000 };
}

describe("request durations in /metrics", () => {
  it("sum, per model, each request's time from arrival to its last byte", async () => {
    const [slow] = await servers([{ latencyMs: LATENCY_MS }], "duration-");
    const config = statefulConfig({ model: `duration-${crypto.randomUUID().slice(0, 8)}`, replicas: [{ id: "slow", url: slow!.url }], routing: "{ affinity: { enabled: false } }" });
    await publish(config.yaml);
    const started = Date.now();
    for (let i = 0; i < REQUESTS; i++) {
      const res = await chat(config.model);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const wall = (Date.now() - started) / 1000;
    await poolAfter(config.pool, REQUESTS);
    await expect
      .poll(async () => metricValue(await metricsText(), "switchyard_request_duration_seconds_sum", { model: config.model, pool: config.pool }), { timeout: 5_000 })
      .toBeGreaterThanOrEqual((REQUESTS * LATENCY_MS) / 1000);
    const text = await metricsText();
    // Each request's own time: not more than the whole sequential run took.
    expect(metricValue(text, "switchyard_request_duration_seconds_sum", { model: config.model })).toBeLessThanOrEqual(wall);
    expect(metricValue(text, "switchyard_requests_total", { model: config.model })).toBe(REQUESTS);
  }, 20_000);
});

describe("RouteWise request durations in /metrics", () => {
  it("count each request once, by the status the client got (the router's own failure included), and sum its time from arrival to its last byte", async () => {
    const [slow] = await servers([{ latencyMs: LATENCY_MS }], "rw-duration-");
    const model = `rw-duration-${crypto.randomUUID().slice(0, 8)}`;
    await publish(`models:\n  ${model}:\n    router: routewise\n    routes:\n      - { id: slow, url: "${slow!.url}/v1", provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 } }\n`);
    // Then the one route fails: the client gets the router's own error, which no route answered.
    const { failed, wall } = await servedThenFailed(model, slow!);

    const requests = (status: string) => async () => metricValue(await metricsText(), "switchyard_routewise_model_requests_total", { model, status });
    await expect.poll(requests("200"), { timeout: 5_000 }).toBe(REQUESTS);
    await expect.poll(requests(String(failed.status)), { timeout: 5_000 }).toBe(1);
    const text = await metricsText();
    expect(metricValue(text, "switchyard_routewise_model_requests_total", { model })).toBe(REQUESTS + 1);
    const seconds = metricValue(text, "switchyard_routewise_request_duration_seconds_sum", { model });
    expect(seconds).toBeGreaterThanOrEqual((REQUESTS * LATENCY_MS) / 1000);
    expect(seconds).toBeLessThanOrEqual(wall); // each request's own time: not more than the whole sequential run took
    // Routes' answers are counted apart: the failure reached the client from no route.
    expect(metricValue(text, "switchyard_routewise_requests_total", { model })).toBe(REQUESTS);
  }, 20_000);
});

describe("graph model request durations in /metrics", () => {
  it("count each request to a graph's model once, by the status the client got, and sum its time to the graph's answer; the graph's own path is not a model and is not counted", async () => {
    const [slow] = await servers([{ latencyMs: LATENCY_MS }], "graph-duration-");
    const [graph, model] = [`g-${crypto.randomUUID().slice(0, 8)}`, `gm-${crypto.randomUUID().slice(0, 8)}`];
    await publish(`models:\n  ${model}: { graph: ${graph} }\ngraphs:\n  ${graph}:\n    nodes:\n      root:\n        routerType: Sequence\n        steps:\n          - { name: only, serviceUrl: "${slow!.url}/v1/chat/completions" }\n`);
    // Then the step fails: the graph answers its error, and the client gets it.
    const { failed, wall } = await servedThenFailed(model, slow!);
    const direct = await post(`/graphs/${graph}`, { messages: [{ role: "user", content: "hi" }] });
    expect(direct.status).toBeGreaterThanOrEqual(500); // the graph ran (its step fails)
    await direct.arrayBuffer();

    const requests = (status: string) => async () => metricValue(await metricsText(), "switchyard_graph_requests_total", { graph, model, status });
    await expect.poll(requests("200"), { timeout: 5_000 }).toBe(REQUESTS);
    await expect.poll(requests(String(failed.status)), { timeout: 5_000 }).toBe(1);
    const text = await metricsText();
    expect(metricValue(text, "switchyard_graph_requests_total", { graph })).toBe(REQUESTS + 1); // not the direct call
    const seconds = metricValue(text, "switchyard_graph_request_duration_seconds_sum", { graph, model });
    expect(seconds).toBeGreaterThanOrEqual((REQUESTS * LATENCY_MS) / 1000);
    expect(seconds).toBeLessThanOrEqual(wall);
  }, 20_000);
});


describe("a graph model's client that leaves", () => {
  // Through app.fetch a test isolate's handler goes on after its client leaves, so the
  // request is made here with an abort signal of its own, as a real client's would fire.
  it("is counted 499, the status it got, not the 500 of the graph it left", async () => {
    const { callModel } = await import("../../src/app/model-call/call");
    const { IsolateState } = await import("../../src/app/state/isolate-state");
    const { cryptoRandom } = await import("../../src/lib/random");
    const { modelTarget } = await import("../../src/core/targets/model-target");
    const { ConfigSource } = await import("../../src/platform/config-source");
    const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
    const [hanging] = await servers([{ hang: true }], "graph-leaving-");
    const [graph, model] = [`g-${crypto.randomUUID().slice(0, 8)}`, `gm-${crypto.randomUUID().slice(0, 8)}`];
    await publish(`models:\n  ${model}: { graph: ${graph} }\ngraphs:\n  ${graph}:\n    nodes:\n      root:\n        routerType: Sequence\n        steps:\n          - { name: only, serviceUrl: "${hanging!.url}/v1/chat/completions" }\n`);
    const snapshot = (await new ConfigSource().get(env)).current!;
    const target = modelTarget(snapshot, model)!;
    const state = new IsolateState();
    const ctx = createExecutionContext();
    const client = new AbortController();
    const body = new TextEncoder().encode(JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }));
    const request = new Request("https://router.test/v1/chat/completions", { method: "POST", signal: client.signal });
    const outcome = callModel({ env, ctx, random: cryptoRandom(), state, snapshot }, target, { dialect: { kind: "openai", apiPath: "/v1/chat/completions" }, body, json: null, request, bearer: undefined, forced: null, startedAt: Date.now() });
    await expect.poll(async () => (await hanging!.stats()).inFlight, { timeout: 5_000 }).toBe(1);
    client.abort();
    await outcome;
    await state.flush();
    await waitOnExecutionContext(ctx);
    const counted = (status: string) => async () => metricValue(await metricsText(), "switchyard_graph_requests_total", { graph, model, status });
    await expect.poll(counted("499"), { timeout: 5_000 }).toBe(1);
    expect(await counted("500")()).toBe(0);
    state.dispose();
  }, 20_000);
});
