/**
 * The isolate's span exporter: finished traces wait in one bounded queue and go to the
 * collector in OTLP/HTTP JSON batches, one export in flight at a time, inside a request's
 * `waitUntil` (never awaited by a response). Spans that finish while an export is in
 * flight go in the next. The queue holds at most `maxQueued` spans: past it the oldest
 * are dropped and counted. An export has its own timeout; one that fails (refused, slow,
 * an error status) is dropped, not retried, so a collector that is down costs a request
 * nothing and the isolate a bounded queue.
 */
import { urlCredentials } from "../../lib/url-credentials";
import type { SpanData } from "../../core/telemetry/span";
import { exportRequest } from "../../core/telemetry/otlp";
import type { Keeper } from "../state/sync-loop";

export const MAX_EXPORT_BATCH = 512; // spans per export: ~0.5 MB of JSON, well under any collector's body limit
const FAILURE_LOG_EVERY_MS = 60_000; // a collector that is down is said once a minute per isolate, not once per request

export interface ExportSettings {
  /** The traces URL (`/v1/traces` already added to a bare origin). */
  url: string;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
  maxQueued: number;
}

export interface ExporterCounts {
  exported: number;
  dropped: number;
  failedExports: number;
}

const RESOURCE = { "service.name": "switchyard" };

export class SpanExporter {
  readonly #queue: SpanData[] = [];
  #settings: ExportSettings | null = null;
  #running = false;
  #lastFailureLogAt = -Infinity;
  readonly counts: ExporterCounts = { exported: 0, dropped: 0, failedExports: 0 };

  /** A finished trace's spans: queued, and an export started in `keeper`'s waitUntil unless one is running. */
  add(spans: readonly SpanData[], settings: ExportSettings, keeper: Keeper): void {
    this.#settings = settings;
    this.#queue.push(...spans);
    const over = this.#queue.length - settings.maxQueued;
    if (over > 0) {
      this.#queue.splice(0, over);
      this.counts.dropped += over;
    }
    this.#kick(keeper);
  }

  /** Spans waiting for an export. */
  get queued(): number {
    return this.#queue.length;
  }

  /** One export at a time: what queues meanwhile goes next, still inside the waitUntil of the request that started the first. */
  #kick(keeper: Keeper): void {
    if (this.#running) return;
    this.#running = true;
    keeper.waitUntil(
      this.#exportOnce().finally(() => {
        this.#running = false;
        if (this.#queue.length > 0) this.#kick(keeper);
      }),
    );
  }

  async #exportOnce(): Promise<void> {
    const settings = this.#settings;
    const batch = this.#queue.splice(0, MAX_EXPORT_BATCH);
    if (!settings || batch.length === 0) return;
    try {
      const basic = urlCredentials(settings.url);
      const res = await fetch(basic?.url ?? settings.url, {
        method: "POST",
        redirect: "manual", // headers (a collector's key) go to the collector only, never to a Location it names
        headers: { ...(basic && { authorization: basic.authorization }), ...settings.headers, "content-type": "application/json" },
        body: JSON.stringify(exportRequest(batch, RESOURCE)),
        signal: AbortSignal.timeout(settings.timeoutMs),
      });
      await res.body?.cancel().catch(() => {});
      if (res.ok) this.counts.exported += batch.length;
      else this.#failed(batch.length, `the collector answered ${res.status}`);
    } catch (error) {
      this.#failed(batch.length, (error as Error)?.name === "TimeoutError" ? `no answer within ${settings.timeoutMs} ms` : "the collector could not be reached");
    }
  }

  #failed(spans: number, why: string): void {
    this.counts.failedExports++;
    this.counts.dropped += spans;
    const now = Date.now();
    if (now - this.#lastFailureLogAt < FAILURE_LOG_EVERY_MS) return;
    this.#lastFailureLogAt = now;
    // The URL is not logged: it may hold a secret; the config names it.
    console.warn(JSON.stringify({ event: "telemetry_export_failed", why, spans, dropped_total: this.counts.dropped }));
  }
}

/** The traces URL: a bare origin gets OTLP/HTTP's default path. */
export function tracesUrl(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.pathname !== "/" && url.pathname !== "") return endpoint;
  url.pathname = "/v1/traces"; // on the URL, not its origin, which would lose the userinfo
  return url.toString();
}
