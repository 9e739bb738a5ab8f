/**
 * A finished span as the router records it: what the OTLP encoder (./otlp.ts) writes out.
 * Times are epoch ms (a Worker's clock moves only across I/O, so finer units would lie).
 */

/** What an attribute may hold: OTLP's scalar values and string arrays. Undefined: left out. */
export type AttributeValue = string | number | boolean | readonly string[];
export type Attributes = Record<string, AttributeValue | undefined>;

export type SpanKind = "internal" | "server" | "client";

export interface SpanEvent {
  name: string;
  atMs: number;
  attributes?: Attributes;
}

export interface SpanData {
  traceId: string;
  spanId: string;
  /** Null for a root span (no client trace context). */
  parentSpanId: string | null;
  name: string;
  kind: SpanKind;
  startMs: number;
  endMs: number;
  attributes: Attributes;
  events: SpanEvent[];
  /** OTel's status: unset unless the span failed (or is known to have succeeded). */
  status: { code: "unset" | "ok" | "error"; message?: string };
}
