/**
 * W3C Trace Context's `traceparent` header: `<version>-<trace-id>-<parent-id>-<flags>`,
 * lowercase hex. A header that does not parse is ignored (the request starts a trace of
 * its own), as the spec asks; a later version is read by its first four fields.
 */

export interface TraceContext {
  traceId: string;
  /** The caller's span: the parent of the router's server span. */
  spanId: string;
  /** The caller's sampling decision (flag 0x01). */
  sampled: boolean;
}

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const LATER_VERSION = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

export function parseTraceparent(header: string | null): TraceContext | null {
  if (header === null) return null;
  const text = header.trim();
  let traceId: string, spanId: string, flags: string;
  const v0 = VERSION_00.exec(text);
  if (v0) [, traceId, spanId, flags] = v0 as unknown as [string, string, string, string];
  else {
    const later = LATER_VERSION.exec(text);
    if (!later || later[1] === "00" || later[1] === "ff") return null; // 00 with extra fields, or the forbidden version
    [, , traceId, spanId, flags] = later as unknown as [string, string, string, string, string];
  }
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

/** The header a callee gets: this trace, `spanId` as its parent, the sampling decision. */
export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`;
}
