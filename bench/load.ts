/**
 * Closed-loop HTTP load generator for `npm run bench`.
 *
 * `concurrency` workers each send one request, read the whole response body, record how
 * long that took and send the next one, until the duration is over. Connections are
 * kept alive (one node:http Agent, maxSockets = concurrency), so after the first request
 * of each worker no run pays for TCP connects. Node's own http client is used rather
 * than undici: undici is only a transitive dependency here, and the same client drives
 * every target, which is what makes the rows comparable.
 *
 * Closed loop means throughput and latency are tied (Little's law: concurrency ≈
 * req/s × mean latency): a slower target is offered less load, not queued requests.
 */
import http from "node:http";

export interface LoadOptions {
  /** Absolute http:// URL on 127.0.0.1. */
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  durationMs: number;
  concurrency: number;
  /** A response without this header counts as an error (proves the request went where we meant). */
  expectHeader?: string;
  /** A request that has not finished after this long is destroyed and counted as an error. */
  requestTimeoutMs?: number;
  /** Stops the run early (Ctrl-C): workers finish their current request and stop. */
  signal?: AbortSignal;
}

export interface LoadResult {
  /** Every finished request: successes and errors. */
  count: number;
  ok: number;
  errors: number;
  /** Error counts by kind: "HTTP 502", "ECONNRESET", "timeout", "missing x-header". */
  errorKinds: Record<string, number>;
  /** From the first request sent to the last one finished. */
  elapsedMs: number;
  /** Successful requests per second (errors excluded, so fast failures cannot inflate it). */
  rps: number;
  /** Latency of successful requests, ms, sorted ascending: for pooling runs. */
  latenciesMs: Float64Array;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
  /** Response body bytes read in total (a sanity check that bodies were consumed). */
  bytes: number;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

type Outcome = { ok: true; bytes: number } | { ok: false; kind: string; bytes: number };

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const target = new URL(opts.url);
  if (target.protocol !== "http:" || target.hostname !== "127.0.0.1") {
    throw new Error(`load generator only targets http://127.0.0.1, not ${opts.url}`);
  }
  if (!(opts.concurrency >= 1) || !(opts.durationMs > 0)) throw new Error("concurrency >= 1 and durationMs > 0 required");

  const body = opts.body === undefined ? undefined : Buffer.from(opts.body);
  const headers: Record<string, string | number> = { ...opts.headers };
  if (body) headers["content-length"] = body.length;
  const expect = opts.expectHeader?.toLowerCase();
  const timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency, maxFreeSockets: opts.concurrency });
  const request: http.RequestOptions = {
    agent,
    host: target.hostname,
    port: target.port,
    path: target.pathname + target.search,
    method: opts.method ?? (body ? "POST" : "GET"),
    headers,
  };

  const once = () =>
    new Promise<Outcome>((resolve) => {
      let bytes = 0;
      const req = http.request(request, (res) => {
        const status = res.statusCode ?? 0;
        res.on("data", (chunk: Buffer) => (bytes += chunk.length));
        res.once("end", () => {
          if (status < 200 || status > 299) resolve({ ok: false, kind: `HTTP ${status}`, bytes });
          else if (expect && res.headers[expect] === undefined) resolve({ ok: false, kind: `missing ${expect}`, bytes });
          else resolve({ ok: true, bytes });
        });
        res.once("error", (err) => resolve({ ok: false, kind: errorKind(err), bytes }));
        res.once("close", () => res.complete || resolve({ ok: false, kind: "response cut short", bytes }));
      });
      req.setTimeout(timeoutMs, () => req.destroy(new Error("timeout")));
      req.once("error", (err) => resolve({ ok: false, kind: errorKind(err), bytes }));
      req.end(body);
    });

  const latencies: number[] = [];
  const errorKinds: Record<string, number> = {};
  let errors = 0;
  let bytes = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(Math.round(opts.durationMs * 1e6));
  let last = start;

  const worker = async () => {
    while (process.hrtime.bigint() < end && !opts.signal?.aborted) {
      const t0 = process.hrtime.bigint();
      const outcome = await once();
      const t1 = process.hrtime.bigint();
      if (t1 > last) last = t1;
      bytes += outcome.bytes;
      if (outcome.ok) latencies.push(Number(t1 - t0) / 1e6);
      else {
        errors++;
        errorKinds[outcome.kind] = (errorKinds[outcome.kind] ?? 0) + 1;
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
  } finally {
    agent.destroy();
  }

  const sorted = Float64Array.from(latencies).sort();
  const elapsedMs = Number(last - start) / 1e6;
  return {
    count: latencies.length + errors,
    ok: latencies.length,
    errors,
    errorKinds,
    elapsedMs,
    rps: elapsedMs > 0 ? latencies.length / (elapsedMs / 1000) : 0,
    latenciesMs: sorted,
    ...summarise(sorted),
    bytes,
  };
}

/** p50/p90/p99/mean/max of ascending latencies (nearest-rank percentiles); NaN when empty. */
export function summarise(sorted: Float64Array): { p50: number; p90: number; p99: number; mean: number; max: number } {
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
  };
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Merges ascending arrays into one ascending array (pooling rounds of one target). */
export function mergeSorted(parts: Float64Array[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out.sort();
}

function errorKind(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(err);
}
