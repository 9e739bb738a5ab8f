import { readVllmMetrics, type ReplicaMetrics } from "../../core/picking/vllm-metrics";

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

/** GET a replica's metrics: its numbers, or null when it did not answer, answered badly, or is not a vLLM server. */
export async function scrapeMetrics(url: string, timeoutMs: number, now: () => number, apiKey?: string): Promise<ReplicaMetrics | null> {
  try {
    const res = await fetch(url, { headers: credential(apiKey), signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) {
      await res.body?.cancel();
      return null;
    }
    return readVllmMetrics(await res.text(), now());
  } catch {
    return null;
  }
}
