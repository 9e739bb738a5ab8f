import { readVllmMetrics, type ReplicaMetrics } from "../../core/picking/vllm-metrics";

const HEALTH_TIMEOUT_MS = 5_000; // a health endpoint slower than this is not healthy

/** GET a replica's health path: healthy on a 2xx within the timeout. */
export async function probeHealth(url: string, periodMs: number): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(Math.min(HEALTH_TIMEOUT_MS, periodMs)) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** GET a replica's metrics: its numbers, or null when it did not answer, answered badly, or is not a vLLM server. */
export async function scrapeMetrics(url: string, timeoutMs: number, now: () => number): Promise<ReplicaMetrics | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) {
      await res.body?.cancel();
      return null;
    }
    return readVllmMetrics(await res.text(), now());
  } catch {
    return null;
  }
}
