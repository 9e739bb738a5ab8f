import type { TraceContext } from "./traceparent";

const RATIO_BITS = 2 ** 56; // OTel's TraceIdRatioBased reads the trace id's low 56 bits

/**
 * Parent-based sampling: a client's trace context decides (its sampled flag is kept, so a
 * trace is whole or absent); a trace the router starts is sampled when its id's low 56
 * bits fall under `ratio`, so every isolate decides the same for the same id.
 */
export function sampled(parent: TraceContext | null, traceId: string, ratio: number): boolean {
  if (parent) return parent.sampled;
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  return parseInt(traceId.slice(-14), 16) < ratio * RATIO_BITS;
}
