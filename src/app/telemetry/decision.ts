import type { Attributes } from "../../core/telemetry/span";
import type { Span } from "./trace";

/**
 * A routing decision's span: INTERNAL, under `parent`, from `startMs` (before the
 * decision's awaits, a pin claim or a queue wait) to now, ended at once. Made after the
 * fact so a decision that returns early never leaves a span open; its facts are worked
 * out only when they are recorded.
 */
export function decided(parent: Span | undefined, name: string, startMs: number, facts: () => Attributes): void {
  if (!parent?.trace.propagating) return;
  const span = parent.child(name, "internal", parent.trace.mode === "recording" ? facts() : {});
  span.backdate(startMs);
  span.end();
}

/** `trace_id` and `span_id` for a log line of a traced request; nothing without a trace. */
export function logFields(span: Span | undefined): { trace_id?: string; span_id?: string } {
  return span ? span.trace.logFields(span) : {};
}
