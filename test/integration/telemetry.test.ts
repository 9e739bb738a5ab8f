/**
 * OpenTelemetry traces (docs/telemetry.md), end to end in workerd: the router sends OTLP
 * JSON to a fake collector on 127.0.0.1 (tools/fakes/fake-otlp.ts) and the fake upstreams
 * record the `traceparent` each attempt carried. Each test reads back one trace and checks
 * its tree: the server span, the routing decision, one CLIENT span per attempt, graph
 * node and step spans, and the GenAI and switchyard.* attributes on them.
 */
import { describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import { chat, post, publish } from "../support/router";
import type { ReceivedSpan } from "../support/collector";
import { clientTraceparent, collectorsClosedAfterEach, traceFrom } from "../support/collector";

const servers = serversClosedAfterEach();
const collectors = collectorsClosedAfterEach();
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
