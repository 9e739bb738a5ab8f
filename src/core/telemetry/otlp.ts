import type { Attributes, AttributeValue, SpanData, SpanKind } from "./span";

/**
 * OTLP/HTTP's JSON encoding of spans (an ExportTraceServiceRequest), written by hand:
 * ids are hex (the JSON mapping's rule, not base64), times are unix nanoseconds as
 * decimal strings, enums are integers. docs/telemetry.md says why no OTel package.
 */

const KIND: Record<SpanKind, number> = { internal: 1, server: 2, client: 3 };
const STATUS = { unset: 0, ok: 1, error: 2 } as const;

export const SCOPE_NAME = "switchyard";

export function exportRequest(spans: readonly SpanData[], resource: Attributes): unknown {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributes(resource) },
        scopeSpans: [{ scope: { name: SCOPE_NAME }, spans: spans.map(span) }],
      },
    ],
  };
}

function span(s: SpanData) {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId !== null && { parentSpanId: s.parentSpanId }),
    name: s.name,
    kind: KIND[s.kind],
    startTimeUnixNano: nanos(s.startMs),
    endTimeUnixNano: nanos(Math.max(s.endMs, s.startMs)),
    attributes: attributes(s.attributes),
    events: s.events.map((e) => ({ timeUnixNano: nanos(e.atMs), name: e.name, attributes: attributes(e.attributes ?? {}) })),
    status: { code: STATUS[s.status.code], ...(s.status.message !== undefined && { message: s.status.message }) },
  };
}

function attributes(attrs: Attributes) {
  const out: { key: string; value: unknown }[] = [];
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined) out.push({ key, value: anyValue(value) });
  return out;
}

function anyValue(value: AttributeValue): unknown {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  return { arrayValue: { values: value.map((v) => ({ stringValue: v })) } };
}

/** Epoch ms as unix nanoseconds, exactly (a double cannot hold ms × 10^6). */
function nanos(ms: number): string {
  return `${Math.round(ms)}000000`;
}
