import * as z from "zod/mini";
import { atMost, MAX_PROBE_TIMEOUT_MS, MAX_QUEUED_SPANS } from "./bounds";
import { isHttpUrl } from "./url";

/**
 * OpenTelemetry traces (docs/telemetry.md): where to send them (OTLP/HTTP, JSON), with
 * what credentials, and how many. Absent: the router records no spans and leaves a
 * client's `traceparent` as it came.
 */

export const DEFAULT_SAMPLING_RATIO = 1; // an operator who names a collector wants to see traffic; lower it for volume
export const DEFAULT_EXPORT_TIMEOUT_MS = 2_000; // a collector on the same network answers in ms; past this an export is given up, never retried
export const DEFAULT_MAX_QUEUED_SPANS = 2_048; // ~2 MB of spans per isolate while a collector is slow (a request is ~4-8 spans)

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/; // RFC 9110 token

export const OtlpSchema = z.strictObject({
  /**
   * The collector's OTLP/HTTP traces URL (`http://collector:4318/v1/traces`); a bare
   * origin gets `/v1/traces`. Usually a `${VAR}`: shown as written, never resolved.
   */
  endpoint: z.string().check(z.refine((value) => isHttpUrl(value), { error: "must be an absolute http(s) URL without query or fragment" })),
  /** Sent with every export (an API key for a hosted collector): values are secrets, write them as `${VAR}`. */
  headers: z._default(
    z.record(
      z.string().check(z.regex(HEADER_NAME, { error: "must be an HTTP header name" })),
      z.string().check(z.refine((v) => !/[\r\n\0]/.test(v), { error: "must not hold a line break" })),
    ),
    {},
  ),
  /** The share of requests that start a trace here, 0-1; a client's `traceparent` decides for its own requests. */
  sampling_ratio: z._default(z.number().check(z.minimum(0), z.maximum(1)), DEFAULT_SAMPLING_RATIO),
  /** One export's time to an answer, ms. */
  timeout_ms: z._default(z.int().check(z.positive(), atMost(MAX_PROBE_TIMEOUT_MS, "ms: a minute")), DEFAULT_EXPORT_TIMEOUT_MS),
  /** Finished spans an isolate keeps while its exports lag; past it the oldest are dropped and counted. */
  max_queued_spans: z._default(z.int().check(z.minimum(1), atMost(MAX_QUEUED_SPANS, "spans per isolate")), DEFAULT_MAX_QUEUED_SPANS),
});

export const TelemetrySchema = z.strictObject({
  otlp: z.optional(OtlpSchema),
});

export type OtlpSettings = z.output<typeof OtlpSchema>;
