/**
 * OpenTelemetry traces (docs/telemetry.md), end to end in workerd: the router sends OTLP
 * JSON to a fake collector on 127.0.0.1 (tools/fakes/fake-otlp.ts) and the fake upstreams
 * record the `traceparent` each attempt carried. Each test reads back one trace and checks
 * its tree: the server span, the routing decision, one CLIENT span per attempt, graph
 * node and step spans, and the GenAI and switchyard.* attributes on them.
 */
import { describe, expect, it, vi } from "vitest";
import { deadUrl, providersClosedAfterEach, serversClosedAfterEach } from "../support/fleet";
import { ADMIN_TOKEN, chat, post, publish, routerFetch } from "../support/router";
import type { ReceivedSpan } from "../support/collector";
import { runPlan } from "../../src/app/engine/engine";
import { fixedTries } from "../../src/app/engine/tries";
import { SlotAgent } from "../../src/app/state/routewise/slot-agent";
import { logFields } from "../../src/app/telemetry/decision";
import { Trace } from "../../src/app/telemetry/trace";
import { cryptoRandom } from "../../src/lib/random";
import { clientTraceparent, collectorsClosedAfterEach, traceFrom } from "../support/collector";

const servers = serversClosedAfterEach();
const collectors = collectorsClosedAfterEach();
const providers = providersClosedAfterEach();
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

function telemetry(url: string, extra = ""): string {
  return `telemetry:\n  otlp: { endpoint: "${url}"${extra} }\n`;
}

function poolYaml(model: string, replicas: { id: string; url: string; weight?: number }[], extra = ""): string {
  const lines = replicas.map((r) => `      - { id: ${r.id}, url: "${r.url}", weight: ${r.weight ?? 1} }`).join("\n");
  return `models:\n  ${model}: { pool: p }\npools:\n  p:\n    replicas:\n${lines}\n${extra}`;
}

const parentOf = (spans: ReceivedSpan[], span: ReceivedSpan) => spans.find((s) => s.spanId === span.parentSpanId);

describe("a pooled request with a fallback", () => {
  it("is one trace: the server span continues the client's, a routing span, and two attempt spans (the failure, then the answer), each sent upstream as the parent", async () => {
    const [bad, good] = await servers([{ status: 503 }, {}], "otel-pool");
    const collector = await collectors();
    const model = unique("m");
    await publish(poolYaml(model, [{ id: "bad", url: bad!.url, weight: 1_000_000 }, { id: "good", url: good!.url }]) + telemetry(collector.url));
    const client = clientTraceparent();
    const res = await chat(model, { max_tokens: 7 }, { traceparent: client.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-replica")).toBe("good");
    await res.text();

    const trace = await traceFrom(collector, client.traceId);
    const server = trace.server;
    expect(server.parentSpanId).toBe(client.spanId);
    expect(server.name).toBe("POST /v1/chat/completions");
    expect(server.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/chat/completions",
      "http.response.status_code": 200,
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": model,
      "gen_ai.request.max_tokens": 7,
      "switchyard.target.kind": "pool",
    });

    const [routing] = trace.named("route ");
    expect(routing!.parentSpanId).toBe(server.spanId);
    expect(routing!.kind).toBe(1);
    expect(routing!.attributes).toMatchObject({ "switchyard.pool": "p", "switchyard.policy": "weighted", "switchyard.candidates": ["bad", "good"], "switchyard.order": ["bad", "good"], "switchyard.pin": "claimed" });

    const [first, second] = trace.attempts;
    expect(trace.attempts).toHaveLength(2);
    for (const attempt of [first!, second!]) {
      expect(attempt.parentSpanId).toBe(server.spanId);
      expect(attempt.name).toBe(`chat ${model}`);
      expect(attempt.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": model, "server.address": "127.0.0.1" });
    }
    expect(first!.attributes).toMatchObject({ "switchyard.target": "bad", "switchyard.attempt.index": 0, "switchyard.attempt.outcome": "retryable_status", "http.response.status_code": 503, "error.type": "503" });
    expect(first!.status.code).toBe(2);
    expect(second!.attributes).toMatchObject({ "switchyard.target": "good", "switchyard.attempt.index": 1, "switchyard.attempt.outcome": "answered", "http.response.status_code": 200, "switchyard.retry_reason": "503", "switchyard.won": true });
    expect(second!.attributes["error.type"]).toBeUndefined();

    // Each upstream saw its own attempt's span as the parent, in the client's trace, sampled.
    const sentTo = async (s: typeof bad) => (await s!.stats()).recent.filter((r) => r.path === "/v1/chat/completions").at(-1)!.headers.traceparent;
    expect(await sentTo(bad)).toBe(`00-${client.traceId}-${first!.spanId}-01`);
    expect(await sentTo(good)).toBe(`00-${client.traceId}-${second!.spanId}-01`);
  });
});

describe("a streamed request", () => {
  it("has an attempt span that covers the body, with time to first byte, and a server span that ends after it", async () => {
    const [s] = await servers([{ streamChunks: 4, chunkIntervalMs: 60 }], "otel-stream");
    const collector = await collectors();
    const model = unique("m");
    await publish(poolYaml(model, [{ id: "only", url: s!.url }]) + telemetry(collector.url));
    const client = clientTraceparent();
    const res = await chat(model, { stream: true }, { traceparent: client.header });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("[DONE]");

    const trace = await traceFrom(collector, client.traceId);
    const [attempt] = trace.attempts;
    expect(trace.attempts).toHaveLength(1);
    expect(attempt!.attributes).toMatchObject({ "switchyard.target": "only", "switchyard.attempt.outcome": "answered", "switchyard.body_end": "complete", "switchyard.won": true });
    expect(typeof attempt!.attributes["switchyard.ttfb_ms"]).toBe("number");
    // The body took ~4 × 60 ms after the first byte: the attempt span covers it, and the server span covers the attempt.
    const ms = (s: ReceivedSpan) => (Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6);
    expect(ms(attempt!)).toBeGreaterThanOrEqual(150);
    expect(BigInt(trace.server.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(attempt!.endTimeUnixNano));
  });
});

describe("a pool's answer", () => {
  it("gives its attempt span gen_ai.response.model from the model the answer names: a JSON body's, or a stream's first chunk's", async () => {
    const answer = { id: "chatcmpl-1", object: "chat.completion", created: 1, model: "llama-3.1-8b-instruct-2026-11", choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }] };
    const [json, stream, silent] = await servers([{ reply: { body: answer } }, { streamChunks: 2 }, { reply: { body: { ...answer, model: undefined } } }], "otel-answer-model");
    const collector = await collectors();
    const [a, b, c] = [unique("json"), unique("stream"), unique("silent")];
    await publish(
      `models:\n  ${a}: { pool: pj }\n  ${b}: { pool: ps, upstream_model: served-name }\n  ${c}: { pool: pn }\npools:\n  pj: { replicas: [{ id: j, url: "${json!.url}" }] }\n  ps: { replicas: [{ id: s, url: "${stream!.url}" }] }\n  pn: { replicas: [{ id: n, url: "${silent!.url}" }] }\n` + telemetry(collector.url),
    );
    const attemptOf = async (model: string, body: Record<string, unknown>) => {
      const client = clientTraceparent();
      const res = await chat(model, body, { traceparent: client.header });
      expect(res.status).toBe(200);
      const text = await res.text();
      return { text, attempt: (await traceFrom(collector, client.traceId)).attempts[0]! };
    };
    const fixed = await attemptOf(a, {});
    expect(fixed.attempt.attributes).toMatchObject({ "gen_ai.request.model": a, "gen_ai.response.model": "llama-3.1-8b-instruct-2026-11" });
    expect(JSON.parse(fixed.text)).toEqual(answer); // read, not changed
    const streamed = await attemptOf(b, { stream: true });
    expect(streamed.attempt.attributes).toMatchObject({ "gen_ai.request.model": b, "gen_ai.response.model": "served-name" }); // the fake answers as the model it was asked for
    expect(streamed.text).toContain("[DONE]");
    const unnamed = await attemptOf(c, {});
    expect(unnamed.attempt.attributes["gen_ai.response.model"]).toBeUndefined();
  });
});

describe("a request that waits for another's prefill (policy: switchyard)", () => {
  it("has a prefill wait span under the server span, with the replica and how long it waited", async () => {
    // Headers (and so the first chunk) 400 ms after the request: the first request is "prefilling" that long.
    const [s] = await servers([{ latencyMs: 400, streamChunks: 2 }], "otel-prefill");
    const collector = await collectors();
    const model = unique("m");
    await publish(poolYaml(model, [{ id: "only", url: s!.url }], "    policy: switchyard\n") + telemetry(collector.url));
    const system = "A long shared system prompt for the prefill gate. ".repeat(60);
    const ask = (question: string, headers: Record<string, string> = {}) => post("/v1/chat/completions", { model, stream: true, messages: [{ role: "system", content: system }, { role: "user", content: question }] }, headers);
    const first = ask("first");
    await new Promise((r) => setTimeout(r, 100));
    const client = clientTraceparent();
    const second = await ask("second", { traceparent: client.header });
    await second.text();
    await (await first).text();

    const trace = await traceFrom(collector, client.traceId);
    const [wait] = trace.named("prefill wait");
    expect(wait, trace.spans.map((sp) => sp.name).join(", ")).toBeDefined();
    expect(wait!.parentSpanId).toBe(trace.server.spanId);
    expect(wait!.attributes["switchyard.target"]).toBe("only");
    expect(Number(wait!.attributes["switchyard.prefill_wait_ms"])).toBeGreaterThanOrEqual(150); // the first's 400 ms, less the 100 ms head start, less slack
  });
});

describe("a RouteWise request with a hedge", () => {
  it("has the decision (split, budget) and two attempt spans racing: the primary sent the hedge, the hedge won", async () => {
    const [cheap, fast] = await providers([{ ttftMs: 5, slowFraction: 1, slowTtftMs: 1_500, seed: 7 }, { ttftMs: 20 }], "otel-rw");
    const collector = await collectors();
    const model = unique("rw");
    const routes = `      - { id: cheap, url: "${cheap!.url}", provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 } }\n      - { id: fast, url: "${fast!.url}", provider_type: on_demand, pricing: { input: 0.00001, output: 0.00002 } }`;
    await publish(`models:\n  ${model}:\n    router: routewise\n    router_params: { budget_alpha: 0, envelope_min_samples: 1, latency_hedge_mode: slo, latency_slo_ms: 200 }\n    routes:\n${routes}\n` + telemetry(collector.url));
    const calibrated = await post(`/admin/routewise/${model}/calibrate`, { samples: [{ route: "cheap", ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 }, { route: "fast", ttft_ms: 40, total_ms: 50, prompt_tokens: 6, output_tokens: 8 }] }, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(calibrated.status).toBe(200);
    const client = clientTraceparent();
    const res = await post("/v1/chat/completions", { model, max_tokens: 8, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "How deep is the sea?" }] }, { traceparent: client.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-hedge")).toBe("fired");
    expect(await res.text()).toContain("[DONE]");

    const trace = await traceFrom(collector, client.traceId);
    const [decision] = trace.named("route ");
    expect(decision!.parentSpanId).toBe(trace.server.spanId);
    expect(decision!.attributes).toMatchObject({ "switchyard.policy": "routewise", "switchyard.candidates": ["cheap", "fast"], "switchyard.order": ["cheap", "fast"] });
    expect(decision!.attributes["switchyard.routewise.split"]).toContain("cheap=1");
    expect(typeof decision!.attributes["switchyard.routewise.budget"]).toBe("number");

    const [primary, hedge] = trace.attempts;
    expect(trace.attempts).toHaveLength(2);
    expect(primary!.attributes).toMatchObject({ "switchyard.target": "cheap", "switchyard.attempt.index": 0 });
    expect(primary!.attributes["switchyard.won"]).toBeUndefined();
    expect(primary!.events.map((e) => e.name)).toContain("hedge_sent");
    expect(hedge!.attributes).toMatchObject({ "switchyard.target": "fast", "switchyard.hedge": true, "switchyard.retry_reason": "hedge", "switchyard.won": true, "switchyard.hedge.won_by": "hedge", "switchyard.body_end": "complete" });
    // Metered: the winner's usage is on its span.
    expect(hedge!.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    expect(hedge!.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
    expect(hedge!.attributes["gen_ai.response.model"]).toBe(model); // the fake provider answers with the model it was asked for
    for (const a of [primary!, hedge!]) expect(a.parentSpanId).toBe(trace.server.spanId);
    // The loser was stopped by the router: not an upstream error.
    expect(primary!.status.code ?? 0).not.toBe(2);
  });
});

describe("a graph request", () => {
  it("has a graph span, node spans, and step spans holding their attempts (a pool step also its routing span)", async () => {
    const [pre, model] = await servers([{ reply: { body: { instances: [[1]] } } }, { reply: { body: { predictions: [7] } } }], "otel-graph");
    const collector = await collectors();
    const [pool, graph] = [unique("gp"), unique("g")];
    await publish(`pools:\n  ${pool}:\n    replicas:\n      - { id: only, url: "${model!.url}" }\n${telemetry(collector.url)}---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${graph}
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - { name: prep, serviceUrl: "${pre!.url}/v1/models/prep:predict" }
      - { name: classify, pool: ${pool}, path: /v1/models/iris:predict, data: $response }
`);
    const client = clientTraceparent();
    const res = await post(`/graphs/${graph}`, { instances: [[1, 2]] }, { traceparent: client.header });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ predictions: [7] });

    const trace = await traceFrom(collector, client.traceId);
    expect(trace.server.name).toBe("POST /graphs/<name>[/...]");
    const [graphSpan] = trace.named("graph ");
    expect(graphSpan!.parentSpanId).toBe(trace.server.spanId);
    expect(graphSpan!.attributes).toMatchObject({ "switchyard.graph": graph, "switchyard.graph.path": ["root/prep", "root/classify"], "http.response.status_code": 200 });
    const [node] = trace.named("node root");
    expect(node!.parentSpanId).toBe(graphSpan!.spanId);
    const steps = trace.named("step ");
    expect(steps.map((s) => s.name).sort()).toEqual(["step root/classify", "step root/prep"]);
    for (const step of steps) expect(step.parentSpanId).toBe(node!.spanId);
    const step = (name: string) => steps.find((s) => s.name === `step ${name}`)!;
    // The URL step: its attempt under it. The pool step: the pool's routing span and its attempt under it.
    expect(trace.childrenOf(step("root/prep")).map((s) => s.kind)).toEqual([3]);
    const underPool = trace.childrenOf(step("root/classify"));
    expect(underPool.map((s) => s.name).sort()).toEqual([`attempt only`, `route graph:${graph}`]);
    expect(underPool.find((s) => s.kind === 3)!.attributes).toMatchObject({ "switchyard.target": "only", "http.response.status_code": 200 });
    // Each step's upstream got the trace, with its attempt as the parent.
    const sent = (await model!.stats()).recent.at(-1)!.headers.traceparent;
    expect(sent).toBe(`00-${client.traceId}-${underPool.find((s) => s.kind === 3)!.spanId}-01`);
  });
});

describe("a collector that hangs, refuses or fails", () => {
  it("changes neither a request's answer nor its latency: the export waits in the background", async () => {
    const [s] = await servers([{}], "otel-hang");
    const hanging = await collectors({ mode: "hang" });
    const model = unique("m");
    // The export's own timeout (10 s) is far past the request: were it on the response path, the request would wait for it.
    await publish(poolYaml(model, [{ id: "only", url: s!.url }]) + telemetry(hanging.url, ", timeout_ms: 10000"));
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const res = await chat(model);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ object: "chat.completion" });
      expect(Date.now() - started, "well inside the collector's hang").toBeLessThan(2_000);
    }
    // The exports did reach it, and hang there.
    await expect.poll(async () => (await hanging.stats()).held, { timeout: 5_000 }).toBeGreaterThan(0);
  });

  it("holds at most max_queued_spans while an export hangs: the oldest are dropped and counted", async () => {
    const [s] = await servers([{}], "otel-bound");
    const hanging = await collectors({ mode: "hang" });
    const model = unique("m");
    await publish(poolYaml(model, [{ id: "only", url: s!.url }]) + telemetry(hanging.url, ", timeout_ms: 10000, max_queued_spans: 5"));
    const isolate = async () => ((await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { telemetry: { isolate: { dropped: number; queued: number } } }).telemetry.isolate;
    // A trace goes out once its answer has been read to the end (a recorded trace reads the answer's first chunk for its model).
    const answered = async () => {
      const res = await chat(model);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    };
    // The first trace's export hangs at the collector; the next ones wait in the queue.
    await answered();
    await expect.poll(async () => (await hanging.stats()).held, { timeout: 5_000 }).toBe(1);
    const before = await isolate();
    for (let i = 0; i < 4; i++) await answered(); // 3 spans each: server, routing, attempt
    // The last trace is handed over when its pump has ended, just after the client's last byte.
    await expect.poll(async () => (await isolate()).dropped - before.dropped, { timeout: 5_000 }).toBe(4 * 3 - 5);
    expect((await isolate()).queued).toBe(5);
  });

  it("a collector that refuses connections, or answers 503, changes nothing either", async () => {
    const [s] = await servers([{}], "otel-down");
    const failing = await collectors({ mode: "status", status: 503 });
    for (const endpoint of [await deadUrl(), failing.url]) {
      const model = unique("m");
      await publish(poolYaml(model, [{ id: "only", url: s!.url }]) + telemetry(endpoint));
      const started = Date.now();
      const res = await chat(model);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ object: "chat.completion" });
      expect(Date.now() - started).toBeLessThan(2_000);
    }
    await expect.poll(async () => (await failing.stats()).exports.length, { timeout: 5_000 }).toBeGreaterThan(0);
  });
});

describe("secrets", () => {
  it("no api key, ${VAR} value, collector header value, credential or prompt text is in any exported span; the collector gets its headers", async () => {
    const [s] = await servers([{}], "otel-secret");
    const collector = await collectors();
    const model = unique("m");
    const literal = "literal-collector-secret-4242";
    await publish(
      `models:\n  ${model}: { pool: p }\npools:\n  p:\n    replicas:\n      - { id: only, url: "${s!.url}", api_key: "\${TEST_CLIENT_KEY}" }\n` +
        `telemetry:\n  otlp:\n    endpoint: "${collector.url}"\n    headers: { x-api-key: "\${TEST_CLIENT_KEY}", x-literal: ${literal} }\n`,
    );
    const prompt = "my-private-prompt-text-987";
    const client = clientTraceparent();
    const res = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: prompt }] }, { traceparent: client.header, authorization: "Bearer client-bearer-secret-555", "x-switchyard-admin-token": ADMIN_TOKEN });
    expect(res.status).toBe(200);
    await res.text();
    await traceFrom(collector, client.traceId);
    expect((await s!.stats()).recent.at(-1)!.headers.authorization).toBe("Bearer sk-from-secret"); // the upstream did get its key
    const exports = (await collector.stats()).exports;
    expect(exports.length).toBeGreaterThan(0);
    for (const e of exports) {
      expect(e.headers["x-api-key"]).toBe("sk-from-secret");
      expect(e.headers["x-literal"]).toBe(literal);
      expect(e.path).toBe("/v1/traces");
      for (const secret of ["sk-from-secret", literal, "client-bearer-secret-555", ADMIN_TOKEN, prompt]) expect(e.raw).not.toContain(secret);
    }
    // /routing shows where traces go, header names only.
    const view = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { telemetry: { otlp: { endpoint: string; headers: string[] } } };
    expect(view.telemetry.otlp).toMatchObject({ endpoint: collector.url, headers: ["x-api-key", "x-literal"] });
    expect(JSON.stringify(view)).not.toContain(literal);
  });
});

describe("a collector behind Basic auth", () => {
  it("gets the endpoint's userinfo as an Authorization header, which the runtime's fetch would drop", async () => {
    const [s] = await servers([{}], "otel-basic");
    const collector = await collectors();
    const model = unique("m");
    await publish(`models:\n  ${model}: { pool: p }\npools:\n  p:\n    replicas:\n      - { id: only, url: "${s!.url}" }\n` + telemetry(collector.url.replace("http://", "http://tenant:s%3Acret@")));
    const client = clientTraceparent();
    expect((await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] }, { traceparent: client.header })).status).toBe(200);
    await traceFrom(collector, client.traceId);
    for (const e of (await collector.stats()).exports) expect(e.headers.authorization).toBe(`Basic ${btoa("tenant:s:cret")}`);
  });
});

describe("sampling and opting out", () => {
  it("sampling_ratio 0 exports nothing of a request that starts its trace here, yet sends a trace context upstream (not sampled); a client's sampled flag still wins", async () => {
    const [s] = await servers([{}], "otel-ratio");
    const collector = await collectors();
    const model = unique("m");
    await publish(poolYaml(model, [{ id: "only", url: s!.url }]) + telemetry(collector.url, ", sampling_ratio: 0"));
    for (let i = 0; i < 5; i++) expect((await chat(model)).status).toBe(200);
    const sent = (await s!.stats()).recent.filter((r) => r.path === "/v1/chat/completions").map((r) => r.headers.traceparent);
    expect(sent).toHaveLength(5);
    for (const header of sent) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    // A sampled client request then arrives: once its trace is in, nothing else ever was.
    const client = clientTraceparent(true);
    expect((await chat(model, {}, { traceparent: client.header })).status).toBe(200);
    await traceFrom(collector, client.traceId);
    expect(new Set((await collector.spans()).map((span) => span.traceId))).toEqual(new Set([client.traceId]));
  });

  it("a client's unsampled traceparent is continued upstream with its flag, and nothing is exported", async () => {
    const [s] = await servers([{}], "otel-unsampled");
    const collector = await collectors();
    const model = unique("m");
    await publish(poolYaml(model, [{ id: "only", url: s!.url }]) + telemetry(collector.url));
    const client = clientTraceparent(false);
    expect((await chat(model, {}, { traceparent: client.header })).status).toBe(200);
    const sent = (await s!.stats()).recent.at(-1)!.headers.traceparent!;
    expect(sent).toMatch(new RegExp(`^00-${client.traceId}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(client.spanId); // the router's own attempt span is the parent
    const marker = clientTraceparent(true);
    expect((await chat(model, {}, { traceparent: marker.header })).status).toBe(200);
    await traceFrom(collector, marker.traceId);
    expect((await collector.spans()).some((span) => span.traceId === client.traceId)).toBe(false);
  });

  it("a model with telemetry: false records nothing and passes the client's traceparent upstream untouched; its neighbour is traced", async () => {
    const [s] = await servers([{}], "otel-optout");
    const collector = await collectors();
    const [quiet, loud] = [unique("quiet"), unique("loud")];
    await publish(`models:\n  ${quiet}: { pool: p, telemetry: false }\n  ${loud}: { pool: p }\npools:\n  p:\n    replicas:\n      - { id: only, url: "${s!.url}" }\n` + telemetry(collector.url));
    const hidden = clientTraceparent(true);
    expect((await chat(quiet, {}, { traceparent: hidden.header })).status).toBe(200);
    expect((await s!.stats()).recent.at(-1)!.headers.traceparent).toBe(hidden.header);
    const shown = clientTraceparent(true);
    expect((await chat(loud, {}, { traceparent: shown.header })).status).toBe(200);
    await traceFrom(collector, shown.traceId);
    expect((await collector.spans()).some((span) => span.traceId === hidden.traceId)).toBe(false);
  });

  it("a graph with telemetry: false records nothing on its own path or through a model, and sends no trace context of the router's; /routing names it", async () => {
    const [step] = await servers([{ reply: { body: { predictions: [7] } } }], "otel-graph-optout");
    const collector = await collectors();
    const [quiet, viaModel, loud] = [unique("gq"), unique("mq"), unique("ml")];
    await publish(`models:\n  ${viaModel}: { graph: ${quiet} }\n  ${loud}: { pool: p }\npools:\n  p:\n    replicas:\n      - { id: only, url: "${step!.url}" }\ngraph_settings: { propagate_headers: [Traceparent] }\n${telemetry(collector.url)}---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${quiet}
spec:
  telemetry: false
  nodes:
    root:
      routerType: Sequence
      steps:
      - { name: only, serviceUrl: "${step!.url}/v1/models/m:predict" }
`);
    const hidden = [clientTraceparent(true), clientTraceparent(true)];
    expect((await post(`/graphs/${quiet}`, { instances: [[1]] }, { traceparent: hidden[0]!.header })).status).toBe(200);
    expect((await post(`/v1/models/${viaModel}:predict`, { instances: [[1]] }, { traceparent: hidden[1]!.header })).status).toBe(200);
    const stepCalls = (await step!.stats()).recent.filter((r) => r.path === "/v1/models/m:predict");
    expect(stepCalls).toHaveLength(2);
    // The router names no span of its own upstream: each step gets its client's header as it came (propagate_headers forwards it).
    expect(stepCalls.map((call) => call.headers.traceparent)).toEqual(hidden.map((h) => h.header));
    const shown = clientTraceparent(true);
    expect((await chat(loud, {}, { traceparent: shown.header })).status).toBe(200);
    await traceFrom(collector, shown.traceId);
    const exported = new Set((await collector.spans()).map((span) => span.traceId));
    for (const h of hidden) expect(exported.has(h.traceId)).toBe(false);
    const view = (await (await routerFetch("/routing", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { telemetry: { opted_out_graphs: string[] } };
    expect(view.telemetry.opted_out_graphs).toEqual([quiet]);
  });
});

describe("log lines", () => {
  it("carry the trace id (and the server span's id) of the request they are about, traced or not", async () => {
    const [down] = await servers([{ status: 503 }], "otel-log");
    const collector = await collectors();
    const [traced, plain] = [unique("traced"), unique("plain")];
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      await publish(`models:\n  ${traced}: { pool: p }\n  ${plain}: { pool: p, telemetry: false }\npools:\n  p:\n    replicas:\n      - { id: only, url: "${down!.url}" }\n` + telemetry(collector.url));
      const a = clientTraceparent(true);
      expect((await chat(traced, {}, { traceparent: a.header })).status).toBe(503);
      const b = clientTraceparent(true);
      expect((await chat(plain, {}, { traceparent: b.header })).status).toBe(503);
      const lines = warn.mock.calls.map((args) => JSON.parse(String(args[0])) as Record<string, unknown>).filter((l) => l.event === "upstream_exhausted");
      const of = (model: string) => lines.find((l) => l.model === model)!;
      const server = (await traceFrom(collector, a.traceId)).server;
      expect(of(traced)).toMatchObject({ trace_id: a.traceId, span_id: server.spanId });
      expect(of(plain)).toMatchObject({ trace_id: b.traceId });
      expect(of(plain).span_id).toBeUndefined();
      // Opted out with no traceparent of the client's: the id the router made up went nowhere, so none is logged.
      warn.mockClear();
      expect((await chat(plain)).status).toBe(503);
      const bare = warn.mock.calls.map((args) => JSON.parse(String(args[0])) as Record<string, unknown>).find((l) => l.event === "upstream_exhausted" && l.model === plain)!;
      expect(bare).toBeDefined();
      expect(bare.trace_id).toBeUndefined();
    } finally {
      warn.mockRestore();
    }
  });

  it("the engine's attempt_observer_failed and a slot acquire's shared_state_unavailable carry the trace id of the request they are about", async () => {
    const [up] = await servers([{}], "otel-engine-log");
    const client = clientTraceparent(true);
    // The request's trace as the surface opens it for a client's traceparent (log only: no collector here).
    const trace = new Trace({ traceId: client.traceId, parentSpanId: client.spanId, sampled: true, mode: "log_only", random: cryptoRandom(), sink: () => {}, redact: (t) => t }, "POST /v1/chat/completions", Date.now(), {});
    const log = logFields(trace.root);
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const held: Promise<unknown>[] = [];
    try {
      const result = await runPlan({
        ...fixedTries([{ target: { id: "only", url: `${up!.url}/v1/chat/completions` }, body: "{}" }]),
        headers: new Headers({ "content-type": "application/json" }),
        policy: { tryTimeoutMs: 5_000, deadlineMs: 10_000, retryable: () => false, deliverLastAnswer: true },
        signal: undefined,
        startedAt: Date.now(),
        waitUntil: (p) => void held.push(p),
        logFields: log,
        observers: [{ started: () => { throw new Error("observer broke"); } }],
      });
      expect(result.delivered).toBe(true); // an observer that throws stops neither the others nor the engine
      if (result.delivered) await result.response.text();
      await Promise.all(held);
      // A concurrency pool's object that cannot be reached: the request goes on without a slot, and the line says which request.
      const unreachable = { acquire: () => Promise.reject(new Error("object unreachable")), sync: () => Promise.reject(new Error("no")), snapshot: () => Promise.reject(new Error("no")) };
      const slots = new SlotAgent(() => "isolate", "sub", 2, () => unreachable);
      expect(await slots.acquire({ waitUntil: (p) => void p.catch(() => {}) }, log)).toBe(false);
      const lines = error.mock.calls.map((args) => JSON.parse(String(args[0])) as Record<string, unknown>);
      expect(lines.find((l) => l.event === "attempt_observer_failed")).toMatchObject({ message: "observer broke", trace_id: client.traceId });
      expect(lines.find((l) => l.event === "shared_state_unavailable" && l.what === "slot_acquire")).toMatchObject({ trace_id: client.traceId });
    } finally {
      error.mockRestore();
    }
  });
});
