import { readUpTo } from "../../lib/bounded-read";
import { readVllmMetrics } from "../../core/picking/vllm-metrics";
import type { ScrapeAnswer } from "../../core/pool/replica-checks";
import { PrometheusLimitError } from "../../lib/prometheus/parse";
import { ANTHROPIC_VERSION } from "../../core/upstream/headers";
import { urlCredentials } from "../../lib/url-credentials";

const HEALTH_TIMEOUT_MS = 5_000; // a health endpoint slower than this is not healthy

/** The replica's credential, as model calls send it (src/app/engine/engine.ts): Anthropic's own header to an Anthropic-native replica. */
export interface ReplicaCredential {
  apiKey?: string;
  dialect?: "anthropic";
}

/** The URL to fetch and its headers: the replica's `api_key`, else its URL's userinfo as Basic auth (src/lib/url-credentials.ts). */
const credential = (url: string, { apiKey, dialect }: ReplicaCredential): [string, HeadersInit] => {
  if (apiKey) return [url, dialect === "anthropic" ? { "x-api-key": apiKey, "anthropic-version": ANTHROPIC_VERSION } : { authorization: `Bearer ${apiKey}` }];
  const basic = urlCredentials(url);
  return basic ? [basic.url, { authorization: basic.authorization }] : [url, {}];
};

/** GET a replica's health path: healthy on a 2xx within the timeout. */
export async function probeHealth(url: string, periodMs: number, key: ReplicaCredential = {}): Promise<boolean> {
  try {
    const [target, headers] = credential(url, key);
    const res = await fetch(target, { headers, redirect: "manual", signal: AbortSignal.timeout(Math.min(HEALTH_TIMEOUT_MS, periodMs)) });
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
export async function scrapeMetrics(url: string, timeoutMs: number, now: () => number, key: ReplicaCredential = {}): Promise<ScrapeAnswer> {
  let res: Response;
  try {
    const [target, headers] = credential(url, key);
    res = await fetch(target, { headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    return { error: (error as Error)?.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : "could not connect" };
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => {});
    return { error: `answered ${res.status}` };
  }
  let text: string | null;
  try {
    const bytes = await readUpTo(res.body, res.headers.get("content-length"), MAX_METRICS_BYTES);
    text = bytes && new TextDecoder().decode(bytes);
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
