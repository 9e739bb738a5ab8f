/**
 * Where a request's trace begins (docs/telemetry.md): a traced route's request, once the
 * preamble has found the config. The client's `traceparent` is continued (its sampled
 * flag kept); without one, the router starts a trace and samples it by
 * `telemetry.otlp.sampling_ratio`. Without a collector configured, a client's trace id
 * still goes on the request's log lines, and its header goes upstream untouched.
 */
import { tracesUrl } from "../../app/telemetry/exporter";
import type { ExportSettings, SpanExporter } from "../../app/telemetry/exporter";
import { Trace } from "../../app/telemetry/trace";
import type { OtlpSettings } from "../../core/config/telemetry-schema";
import { newTraceId } from "../../core/telemetry/ids";
import { sampled } from "../../core/telemetry/sampling";
import { parseTraceparent } from "../../core/telemetry/traceparent";
import { cryptoRandom } from "../../lib/random";
import type { ConfigSnapshot } from "../config-source";
import type { SurfaceRoute } from "./route";
import { routeName } from "./route";

// Ids come from Web Crypto through their own buffer, never the routing decisions' random source (tests script that one).
const ids = cryptoRandom();
const settingsOf = new WeakMap<OtlpSettings, ExportSettings>();

export function openTrace(route: SurfaceRoute, request: Request, path: string, snapshot: ConfigSnapshot | null, ctx: ExecutionContext, exporter: SpanExporter, startedAt: number): Trace | undefined {
  if (!route.traced || !snapshot) return undefined;
  const client = parseTraceparent(request.headers.get("traceparent"));
  const otlp = snapshot.config.telemetry.otlp;
  if (!otlp && !client) return undefined;
  const traceId = client?.traceId ?? newTraceId(ids);
  const isSampled = sampled(client, traceId, otlp?.sampling_ratio ?? 0);
  const settings = otlp && exportSettings(otlp);
  return new Trace(
    {
      traceId,
      parentSpanId: client?.spanId ?? null,
      sampled: isSampled,
      mode: !settings ? "log_only" : isSampled ? "recording" : "propagating",
      random: ids,
      sink: (spans) => settings && exporter.add(spans, settings, ctx),
      redact: (text) => snapshot.redactions.text(text),
    },
    routeName(route),
    startedAt,
    { "http.request.method": request.method, "http.route": typeof route.path === "string" ? route.path : route.path.shown, "url.path": path, "switchyard.config.version": snapshot.version },
  );
}

function exportSettings(otlp: OtlpSettings): ExportSettings {
  let settings = settingsOf.get(otlp);
  if (!settings) {
    settings = { url: tracesUrl(otlp.endpoint), headers: otlp.headers, timeoutMs: otlp.timeout_ms, maxQueued: otlp.max_queued_spans };
    settingsOf.set(otlp, settings);
  }
  return settings;
}
