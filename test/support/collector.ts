/**
 * Fake OTLP collectors (tools/fakes/fake-otlp.ts) for tests inside workerd, through fleet
 * control, and the spans they received as flat records.
 */
import { afterEach, inject } from "vitest";
import type { CollectorStats, FakeCollectorBehaviour } from "../../tools/fakes/fake-otlp-types";

export type { CollectorStats, FakeCollectorBehaviour };

export interface FleetCollector {
  url: string;
  setBehaviour(b: FakeCollectorBehaviour): Promise<void>;
  stats(): Promise<CollectorStats>;
  /** Every span received so far, flattened. */
  spans(): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  startTimeUnixNano: string;
  endTimeUnixNano: string;
}

async function control<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(inject("fleetUrl") + path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`fleet ${method} ${path} -> ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

export async function spawnCollector(behaviour: FakeCollectorBehaviour = {}): Promise<FleetCollector> {
  const id = `collector-${crypto.randomUUID().slice(0, 8)}`;
  const created = await control<{ id: string; url: string }>("POST", "/collectors", { id, behaviour });
  const base = `/collectors/${encodeURIComponent(created.id)}`;
  let closed: Promise<void> | undefined;
  const stats = () => control<CollectorStats>("GET", `${base}/stats`);
  return {
    url: created.url,
    setBehaviour: async (b) => void (await control("PUT", `${base}/behaviour`, b)),
    stats,
    spans: async () => (await stats()).exports.flatMap((e) => spansOf(e.body)),
    close: () => (closed ??= control("DELETE", base).then(() => undefined)),
  };
}

/** `collector(behaviour)` for a test file: spawns collectors and closes them after each test. */
export function collectorsClosedAfterEach(): (behaviour?: FakeCollectorBehaviour) => Promise<FleetCollector> {
  const spawned: FleetCollector[] = [];
  afterEach(async () => {
    await Promise.all(spawned.splice(0).map((c) => c.close()));
  });
  return async (behaviour) => {
    const c = await spawnCollector(behaviour);
    spawned.push(c);
    return c;
  };
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: OtlpAnyValue[] };
}

function valueOf(v: OtlpAnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return v.arrayValue.values.map(valueOf);
  return undefined;
}

const attributesOf = (list: { key: string; value: OtlpAnyValue }[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

/** An ExportTraceServiceRequest's spans, flattened. */
export function spansOf(body: unknown): ReceivedSpan[] {
  const request = body as { resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] } | null;
  return (request?.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        ...(s as unknown as ReceivedSpan),
        attributes: attributesOf(s.attributes as never),
        events: ((s.events as { name: string; attributes?: never }[] | undefined) ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        status: (s.status as ReceivedSpan["status"]) ?? {},
      })),
    ),
  );
}

/** The spans of one trace, with helpers to walk it. */
export class ReceivedTrace {
  constructor(readonly spans: ReceivedSpan[]) {}

  get server(): ReceivedSpan {
    const servers = this.spans.filter((s) => s.kind === 2);
    if (servers.length !== 1) throw new Error(`expected one server span, got ${servers.length}: ${this.spans.map((s) => s.name).join(", ")}`);
    return servers[0]!;
  }

  childrenOf(span: ReceivedSpan): ReceivedSpan[] {
    return this.spans.filter((s) => s.parentSpanId === span.spanId);
  }

  named(prefix: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.name.startsWith(prefix));
  }

  get attempts(): ReceivedSpan[] {
    return this.spans.filter((s) => s.kind === 3).sort((a, b) => Number(a.attributes["switchyard.attempt.index"]) - Number(b.attributes["switchyard.attempt.index"]));
  }
}

/** Waits until the collector holds a whole trace with this id (its server span arrives last) and returns it. */
export async function traceFrom(collector: FleetCollector, traceId: string, timeoutMs = 5_000): Promise<ReceivedTrace> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const spans = (await collector.spans()).filter((s) => s.traceId === traceId);
    if (spans.some((s) => s.kind === 2)) return new ReceivedTrace(spans);
    if (Date.now() > until) throw new Error(`no whole trace ${traceId} within ${timeoutMs} ms (${spans.length} spans)`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A client's `traceparent` with fresh ids: the test then knows the trace id to look for. */
export function clientTraceparent(sampled = true): { header: string; traceId: string; spanId: string } {
  const hex = (bytes: number) => [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
  const traceId = hex(16);
  const spanId = hex(8);
  return { header: `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`, traceId, spanId };
}
