/**
 * The pure parts of tracing (src/core/telemetry/): W3C traceparent, ids, parent-based
 * ratio sampling and the OTLP JSON encoding.
 */
import { describe, expect, it } from "vitest";
import { newSpanId, newTraceId } from "../../src/core/telemetry/ids";
import { exportRequest } from "../../src/core/telemetry/otlp";
import { sampled } from "../../src/core/telemetry/sampling";
import type { SpanData } from "../../src/core/telemetry/span";
import { formatTraceparent, parseTraceparent } from "../../src/core/telemetry/traceparent";
import { cryptoRandom } from "../../src/lib/random";
import { loadConfig } from "../../src/core/config/load";
import { answerChunkModel as answeringModel } from "../../src/app/telemetry/attempt-spans";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("traceparent", () => {
  it("reads version 00 with its sampled flag", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true); // other flag bits do not unset sampling
  });

  it.each([
    ["absent", null],
    ["garbage", "hello"],
    ["upper-case hex", `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`],
    ["an all-zero span id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["version ff", `ff-${TRACE}-${SPAN}-01`],
    ["version 00 with more fields", `00-${TRACE}-${SPAN}-01-extra`],
    ["a short trace id", `00-${TRACE.slice(1)}-${SPAN}-01`],
  ])("ignores %s", (_what, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });

  it("reads a later version by its first four fields", () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-whatever-comes`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
  });

  it("writes what it reads", () => {
    for (const flag of [true, false]) expect(parseTraceparent(formatTraceparent(TRACE, SPAN, flag))).toEqual({ traceId: TRACE, spanId: SPAN, sampled: flag });
  });
});

describe("ids", () => {
  it("are lowercase hex of W3C's lengths, and never all zeros", () => {
    let draws = 0;
    const zerosFirst = { uint32: () => (draws++ < 4 ? 0 : 0xabc) }; // a whole zero trace id is drawn again
    expect(newTraceId(zerosFirst)).toBe("00000abc".repeat(4));
    const random = cryptoRandom();
    expect(newTraceId(random)).toMatch(/^[0-9a-f]{32}$/);
    expect(newSpanId(random)).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe("sampling", () => {
  it("follows the client's flag whatever the ratio", () => {
    expect(sampled({ traceId: TRACE, spanId: SPAN, sampled: true }, TRACE, 0)).toBe(true);
    expect(sampled({ traceId: TRACE, spanId: SPAN, sampled: false }, TRACE, 1)).toBe(false);
  });

  it("samples none at 0, all at 1, and about the ratio between, the same way for the same id", () => {
    const random = cryptoRandom();
    const ids = Array.from({ length: 4_000 }, () => newTraceId(random));
    expect(ids.filter((id) => sampled(null, id, 0))).toHaveLength(0);
    expect(ids.filter((id) => sampled(null, id, 1))).toHaveLength(4_000);
    // n = 4000, p = 0.25: sd = 27.4; ±6 sd is a false failure about once in 10^9 runs.
    const kept = ids.filter((id) => sampled(null, id, 0.25)).length;
    expect(kept).toBeGreaterThan(1_000 - 165);
    expect(kept).toBeLessThan(1_000 + 165);
    expect(ids.filter((id) => sampled(null, id, 0.25)).length).toBe(kept);
  });
});

describe("OTLP JSON", () => {
  const span = (over: Partial<SpanData> = {}): SpanData => ({
    traceId: TRACE,
    spanId: SPAN,
    parentSpanId: null,
    name: "POST /v1/chat/completions",
    kind: "server",
    startMs: 1_700_000_000_123,
    endMs: 1_700_000_000_456,
    attributes: { s: "x", i: 7, d: 0.5, b: true, a: ["p", "q"], gone: undefined },
    events: [{ name: "first_chunk", atMs: 1_700_000_000_200 }],
    status: { code: "error", message: "why" },
    ...over,
  });

  it("writes hex ids, integer enums, unix nanoseconds as strings and typed values", () => {
    const body = exportRequest([span(), span({ spanId: "1111111111111111", parentSpanId: SPAN, kind: "client", status: { code: "unset" } })], { "service.name": "switchyard" }) as {
      resourceSpans: { resource: unknown; scopeSpans: { scope: { name: string }; spans: Record<string, unknown>[] }[] }[];
    };
    const [rs] = body.resourceSpans;
    expect(rs!.resource).toEqual({ attributes: [{ key: "service.name", value: { stringValue: "switchyard" } }] });
    const [root, child] = rs!.scopeSpans[0]!.spans;
    expect(root).toEqual({
      traceId: TRACE,
      spanId: SPAN,
      name: "POST /v1/chat/completions",
      kind: 2,
      startTimeUnixNano: "1700000000123000000",
      endTimeUnixNano: "1700000000456000000",
      attributes: [
        { key: "s", value: { stringValue: "x" } },
        { key: "i", value: { intValue: "7" } },
        { key: "d", value: { doubleValue: 0.5 } },
        { key: "b", value: { boolValue: true } },
        { key: "a", value: { arrayValue: { values: [{ stringValue: "p" }, { stringValue: "q" }] } } },
      ],
      events: [{ timeUnixNano: "1700000000200000000", name: "first_chunk", attributes: [] }],
      status: { code: 2, message: "why" },
    });
    expect(child).toMatchObject({ parentSpanId: SPAN, kind: 3, status: { code: 0 } });
  });
});

describe("the model an answer names (gen_ai.response.model of a pool's answer)", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  it("is the first model field of a JSON body or an event stream's first chunk, unescaped", () => {
    expect(answeringModel(bytes('{"id":"c","object":"chat.completion","created":1,"model":"llama-3","choices":[]}'))).toBe("llama-3");
    expect(answeringModel(bytes('data: {"id":"c","object":"chat.completion.chunk","model" : "org/m\\u00e9"}\n\n'))).toBe("org/mé");
    expect(answeringModel(bytes('event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"claude-x"}}\n\n'))).toBe("claude-x");
  });
  it("is not a model quoted inside a string, nor one past the first 4 KiB, nor a non-string", () => {
    expect(answeringModel(bytes('{"choices":[{"message":{"content":"say \\"model\\": \\"fake\\""}}],"model":"real"}'))).toBe("real");
    expect(answeringModel(bytes(`{"pad":"${"x".repeat(5_000)}","model":"late"}`))).toBeNull();
    expect(answeringModel(bytes('{"model":42}'))).toBeNull();
    expect(answeringModel(bytes(""))).toBeNull();
  });
});

describe("telemetry config", () => {
  const base = { models: { m: { pool: "p" } }, pools: { p: { replicas: [{ id: "r", url: "http://127.0.0.1:9" }] } } };
  const load = (telemetry: unknown, vars: Record<string, string> = {}) => loadConfig(JSON.stringify({ ...base, telemetry }), vars);

  it("takes an endpoint, headers from secrets and a ratio, with defaults", () => {
    const result = load({ otlp: { endpoint: "${OTEL_URL}", headers: { authorization: "Bearer ${OTEL_TOKEN}" } } }, { OTEL_URL: "https://otel.example:4318", OTEL_TOKEN: "tok-123456789" });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.telemetry.otlp).toEqual({ endpoint: "https://otel.example:4318", headers: { authorization: "Bearer tok-123456789" }, sampling_ratio: 1, timeout_ms: 2_000, max_queued_spans: 2_048 });
  });

  it.each([
    [{ otlp: { endpoint: "not a url" } }, "telemetry.otlp.endpoint"],
    [{ otlp: { endpoint: "http://c:4318/v1/traces?key=1" } }, "telemetry.otlp.endpoint"],
    [{ otlp: { endpoint: "http://c:4318", sampling_ratio: 1.5 } }, "telemetry.otlp.sampling_ratio"],
    [{ otlp: { endpoint: "http://c:4318", sampling_ratio: -0.1 } }, "telemetry.otlp.sampling_ratio"],
    [{ otlp: { endpoint: "http://c:4318", headers: { "bad name": "x" } } }, "telemetry.otlp.headers"],
    [{ otlp: { endpoint: "http://c:4318", headers: { ok: "line\nbreak" } } }, "telemetry.otlp.headers.ok"],
    [{ otlp: { endpoint: "http://c:4318", batch: 3 } }, "telemetry.otlp"],
  ])("refuses %j at %s", (telemetry, path) => {
    const result = load(telemetry);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors.some((e) => e.path.startsWith(path)), JSON.stringify(result.errors)).toBe(true);
  });

  it("refuses a model's or a graph's opt-out that is not a boolean, at its path", () => {
    const graph = { nodes: { root: { routerType: "Sequence", steps: [{ serviceUrl: "http://127.0.0.1:9/v1/models/m:predict" }] } } };
    const result = loadConfig(JSON.stringify({ ...base, models: { m: { pool: "p", telemetry: "off" } }, graphs: { g: { ...graph, telemetry: "no" } } }), {});
    expect(result).toMatchObject({
      ok: false,
      errors: expect.arrayContaining([
        { path: "models.m.telemetry", message: "must be a boolean, got a string" },
        { path: "graphs.g.telemetry", message: "must be a boolean, got a string" },
      ]),
    });
  });

  it("keeps a literal header value out of its error messages", () => {
    const result = load({ otlp: { endpoint: "http://c:4318", headers: { "x-key": "literal-secret-value" }, sampling_ratio: 2 } });
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain("literal-secret-value");
  });
});
