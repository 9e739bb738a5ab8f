/**
 * One request's trace: its spans as they open and end, and what its log lines carry. A
 * trace is in one of three modes, decided when the request opens:
 *
 * - recording: sampled, with a collector configured: spans are kept and exported once
 *   the last one ends (a streamed body ends after the response is returned);
 * - propagating: configured but not sampled: spans have ids (each attempt sends its own
 *   `traceparent` upstream, flag 00) and nothing is kept;
 * - log only: no collector, or the model opted out: no spans and no header changes; log
 *   lines carry the client's trace id.
 */
import type { Attributes, AttributeValue, SpanData, SpanKind } from "../../core/telemetry/span";
import { newSpanId } from "../../core/telemetry/ids";
import { formatTraceparent } from "../../core/telemetry/traceparent";
import type { RandomSource } from "../../lib/random";

export type TraceMode = "recording" | "propagating" | "log_only";

/** What a finished trace is handed to (the isolate's exporter, bound to this request's waitUntil). */
export type TraceSink = (spans: SpanData[]) => void;

const MAX_LIST_ITEMS = 64; // a candidates list past this is cut: a pool of hundreds says nothing more per span

export interface TraceInit {
  traceId: string;
  /** The client's span (its `traceparent`), or null: the server span is the root. */
  parentSpanId: string | null;
  sampled: boolean;
  mode: TraceMode;
  random: RandomSource;
  sink: TraceSink;
  /** Every string exported goes through this (the config's redactions: no `${VAR}` value leaves). */
  redact: (text: string) => string;
}

export class Trace {
  readonly traceId: string;
  readonly sampled: boolean;
  #mode: TraceMode;
  readonly #random: RandomSource;
  readonly #sink: TraceSink;
  readonly #redact: (text: string) => string;
  readonly #open = new Set<Span>();
  readonly #done: SpanData[] = [];
  #returned = false;
  /** The trace id is the client's (it sent a `traceparent`), not one the router made. */
  readonly #fromClient: boolean;
  #finished = false;
  /** The server span: the surface's request. */
  readonly root: Span;
  /** What GenAI attributes attempts carry (set when the model is known). */
  genAi: { operation: string; model: string } | null = null;

  constructor(init: TraceInit, name: string, startMs: number, attributes: Attributes) {
    this.traceId = init.traceId;
    this.sampled = init.sampled;
    this.#mode = init.mode;
    this.#fromClient = init.parentSpanId !== null;
    this.#random = init.random;
    this.#sink = init.sink;
    this.#redact = init.redact;
    this.root = new Span(this, init.mode === "log_only" ? null : newSpanId(init.random), init.parentSpanId, name, "server", startMs, attributes);
  }

  get mode(): TraceMode {
    return this.#mode;
  }

  /** The router sends its own trace context upstream (recording or not). */
  get propagating(): boolean {
    return this.#mode !== "log_only";
  }

  /** The model opted out (`models.<m>.telemetry: false`): nothing is recorded or propagated from here on. */
  optOut(): void {
    this.#mode = "log_only";
  }

  /** The surface returned its response: the server span ends when its last child does. */
  returned(): void {
    this.#returned = true;
    this.#maybeFinish();
  }

  /** The router failed: whatever is still open ends now, as an error, so the trace still goes out. */
  abandon(errorType: string): void {
    for (const span of [...this.#open]) span.fail(errorType).end();
    this.root.fail(errorType);
    this.returned();
  }

  /** `trace_id` (and the span's `span_id`) for a log line. */
  logFields(span: Span = this.root): { trace_id?: string; span_id?: string } {
    if (this.#mode === "log_only") {
      // Opted out: only the client's own trace id joins anything; one the router made up went nowhere.
      return this.#fromClient ? { trace_id: this.traceId } : {};
    }
    // A span that is not part of the trace is not named.
    return span.id === null ? { trace_id: this.traceId } : { trace_id: this.traceId, span_id: span.id };
  }

  /** @internal */
  newId(): string | null {
    return this.propagating ? newSpanId(this.#random) : null;
  }

  /** @internal */
  opened(span: Span): void {
    this.#open.add(span);
  }

  /** @internal */
  ended(span: Span, data: SpanData | null): void {
    this.#open.delete(span);
    if (data && this.#mode === "recording") this.#done.push(data);
    this.#maybeFinish();
  }

  #maybeFinish(): void {
    if (this.#finished || !this.#returned || this.#open.size > 0) return;
    this.#finished = true;
    const root = this.root.close(Date.now());
    if (this.#mode !== "recording" || !root) return;
    this.#done.push(root);
    this.#sink(this.#done.map((s) => redacted(s, this.#redact)));
  }
}

export class Span {
  readonly #trace: Trace;
  /** Null in a log-only trace. */
  readonly id: string | null;
  readonly #data: SpanData | null;
  #ended = false;

  constructor(trace: Trace, id: string | null, parentSpanId: string | null, name: string, kind: SpanKind, startMs: number, attributes: Attributes) {
    this.#trace = trace;
    this.id = id;
    this.#data =
      id !== null && trace.mode === "recording"
        ? { traceId: trace.traceId, spanId: id, parentSpanId, name, kind, startMs, endMs: startMs, attributes: { ...attributes }, events: [], status: { code: "unset" } }
        : null;
  }

  get trace(): Trace {
    return this.#trace;
  }

  /** A span under this one, started now; end it exactly once. */
  child(name: string, kind: SpanKind, attributes: Attributes = {}): Span {
    const span = new Span(this.#trace, this.#trace.newId(), this.id, name, kind, Date.now(), attributes);
    this.#trace.opened(span);
    return span;
  }

  set(attributes: Attributes): this {
    if (this.#data) Object.assign(this.#data.attributes, attributes);
    return this;
  }

  event(name: string, attributes?: Attributes): this {
    this.#data?.events.push({ name, atMs: Date.now(), ...(attributes && { attributes }) });
    return this;
  }

  /** OTel's error status, with `error.type` (a low-cardinality class: a status code, `timeout`, ...). */
  /** The span began earlier than it was made (a decision recorded once it is known). */
  backdate(startMs: number): this {
    if (this.#data) this.#data.startMs = Math.min(startMs, this.#data.startMs);
    return this;
  }

  fail(errorType: string, message?: string): this {
    if (this.#data) {
      this.#data.attributes["error.type"] = errorType;
      this.#data.status = { code: "error", ...(message !== undefined && { message }) };
    }
    return this;
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#data) this.#data.endMs = Date.now();
    this.#trace.ended(this, this.#data);
  }

  /** The `traceparent` a callee gets with this span as its parent; null when the router does not propagate. */
  get traceparent(): string | null {
    return this.id === null || !this.#trace.propagating ? null : formatTraceparent(this.#trace.traceId, this.id, this.#trace.sampled);
  }

  /** @internal The server span's end, told by its trace. */
  close(atMs: number): SpanData | null {
    this.#ended = true;
    if (this.#data) this.#data.endMs = atMs;
    return this.#data;
  }
}

function redacted(span: SpanData, redact: (text: string) => string): SpanData {
  const clean = (attrs: Attributes): Attributes => {
    const out: Attributes = {};
    for (const [key, value] of Object.entries(attrs)) out[key] = cleanValue(value, redact);
    return out;
  };
  return {
    ...span,
    name: redact(span.name),
    attributes: clean(span.attributes),
    events: span.events.map((e) => ({ ...e, ...(e.attributes && { attributes: clean(e.attributes) }) })),
    status: span.status.message === undefined ? span.status : { ...span.status, message: redact(span.status.message) },
  };
}

function cleanValue(value: AttributeValue | undefined, redact: (text: string) => string): AttributeValue | undefined {
  if (typeof value === "string") return redact(value);
  if (Array.isArray(value)) return value.slice(0, MAX_LIST_ITEMS).map((v: string) => redact(v));
  return value;
}
