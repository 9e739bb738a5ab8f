/**
 * README's promise about traces, checked from outside: `switchyard serve` as a user runs
 * it, with `telemetry.otlp.endpoint` set to a collector's bare origin (as one points it
 * at a local OpenTelemetry Collector or Jaeger's 4318), sends the request's trace to
 * `<origin>/v1/traces` as OTLP JSON, continuing the client's traceparent.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeServer } from "../../tools/fakes/fake-openai";
import { startFakeCollector, type FakeCollector } from "../../tools/fakes/fake-otlp";
import { freePort, serve, type Served } from "../support/serve-cli";

let tmp: string;
let upstream: FakeServer;
let collector: FakeCollector;
let served: Served | undefined;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-e2e-otel-"));
  upstream = await startFakeOpenAI({ id: "otel-up" });
  collector = await startFakeCollector();
});
afterAll(async () => {
  await served?.stop();
  await Promise.all([upstream.close(), collector.close()]);
  await rm(tmp, { recursive: true, force: true });
});

describe("switchyard serve with telemetry.otlp", () => {
  it("exports the request's spans to <endpoint>/v1/traces, in the client's trace", async () => {
    const config = path.join(tmp, "otel.yaml");
    await writeFile(config, `models:\n  demo-chat: { pool: gpu }\npools:\n  gpu:\n    replicas:\n      - { id: up, url: "${upstream.url}" }\ntelemetry:\n  otlp: { endpoint: "${collector.url}", sampling_ratio: 1 }\n`);
    served = await serve(["--config", config, "--port", "0", "--persist-to", path.join(tmp, "state")], tmp);
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const res = await fetch(`${served.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      body: JSON.stringify({ model: "demo-chat", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    await expect.poll(() => collector.stats().exports.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const [sent] = collector.stats().exports;
    expect(sent!.path).toBe("/v1/traces");
    expect(sent!.headers["content-type"]).toBe("application/json");
    const spans = (sent!.body as { resourceSpans: { scopeSpans: { spans: { traceId: string; name: string; kind: number }[] }[] }[] }).resourceSpans[0]!.scopeSpans[0]!.spans;
    expect(spans.every((s) => s.traceId === traceId)).toBe(true);
    expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(["POST /v1/chat/completions", "route demo-chat", "chat demo-chat"]));
    expect(upstream.stats().recent.at(-1)!.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });
});
