import { readVllmMetrics } from "../../core/picking/vllm-metrics";
import type { ScrapeAnswer } from "../../core/pool/replica-checks";
import { PrometheusLimitError } from "../../lib/prometheus/parse";

const HEALTH_TIMEOUT_MS = 5_000; // a health endpoint slower than this is not healthy

/** The replica's credential, as model calls send it (src/app/engine/engine.ts). */
const credential = (apiKey: string | undefined): HeadersInit => (apiKey ? { authorization: `Bearer ${apiKey}` } : {});

/** GET a replica's health path: healthy on a 2xx within the timeout. */
export async function probeHealth(url: string, periodMs: number, apiKey?: string): Promise<boolean> {
  try {
    const res = await fetch(url, { headers: credential(apiKey), signal: AbortSignal.timeout(Math.min(HEALTH_TIMEOUT_MS, periodMs)) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

export const MAX_METRICS_BYTES = 1_048_576; // 1 MiB: well above a vLLM server's /metrics; past this the body is read no further and the scrape fails

/**
 * GET a replica's metrics: its numbers, or why there are none, in words fit for
 * `/routing` (never the URL or the fetch's own message, which may carry a credential).
 * The body is read as a stream and abandoned past MAX_METRICS_BYTES, so a broken or
 * hostile exporter costs the pool's object at most that much memory.
 */
export async function scrapeMetrics(url: string, timeoutMs: number, now: () => number, apiKey?: string): Promise<ScrapeAnswer> {
  let res: Response;
  try {
    res = await fetch(url, { headers: credential(apiKey), signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    return { error: (error as Error)?.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : "could not connect" };
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => {});
    return { error: `answered ${res.status}` };
  }
  let text: string | null;
  try {
    text = await readTextUpTo(res, MAX_METRICS_BYTES);
  } catch (error) {
    return { error: (error as Error)?.name === "TimeoutError" ? `body not read within ${timeoutMs} ms` : "body broke off" };
  }
  if (text === null) return { error: `metrics body over ${MAX_METRICS_BYTES} bytes` };
  try {
    const metrics = readVllmMetrics(text, now());
    return metrics ? { metrics } : { error: "no vLLM gauges (num_requests_waiting, num_requests_running, kv_cache_usage_perc)" };
  } catch (error) {
    return { error: error instanceof PrometheusLimitError ? error.message : "metrics could not be read" };
  }
}

/** The body as UTF-8 text, or null once it passes `limit` bytes (declared or counted); the rest is never read. */
async function readTextUpTo(res: Response, limit: number): Promise<string | null> {
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (!res.body) return "";
  if (Number.isFinite(declared) && declared > limit) {
    await res.body.cancel().catch(() => {});
    return null;
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let size = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    text += decoder.decode(value, { stream: true });
  }
}
