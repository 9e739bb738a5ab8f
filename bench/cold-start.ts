/**
 * A fresh isolate's time to its first answer: each sample starts a new workerd through
 * Miniflare with an already-built Worker, then sends one request that must answer 2xx
 * with the target's marker header. Two numbers per sample:
 *
 * - start: `new Miniflare` until its socket listens. workerd compiles the Worker's
 *   modules and runs their top level before it listens, so bundle size shows here,
 *   next to a fixed cost of Miniflare and workerd themselves (the pass-through row).
 * - first response: from then until the first answer's last byte: the fetch handler's
 *   first run, and for the router the config read from KV, route table and, with
 *   shared state, the Durable Objects' own first start.
 *
 * Bundling and config publishing happen before the clock starts (deploy-time work).
 * Samples alternate the target order, as the load rounds do.
 */
import { align, median } from "./report";
import type { Started } from "./workers";

const FIRST_REQUEST_TIMEOUT_MS = 30_000; // a cold router on a busy machine; far above the ~10-100 ms expected

export interface ColdTarget {
  name: string;
  /** Starts the Worker on a new workerd; only this and the first request are timed. */
  start(): Promise<Started>;
  request: { path: string; body: string; headers: Record<string, string>; expectHeader: string };
}

export interface ColdSamples {
  name: string;
  startMs: number[];
  firstMs: number[];
}

export async function sampleColdStarts(targets: ColdTarget[], samples: number, signal: AbortSignal): Promise<ColdSamples[]> {
  const out = new Map(targets.map((t) => [t.name, { name: t.name, startMs: [] as number[], firstMs: [] as number[] }]));
  for (let i = 0; i < samples && !signal.aborted; i++) {
    const order = i % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      if (signal.aborted) break;
      const t0 = performance.now();
      const worker = await t.start();
      try {
        const t1 = performance.now();
        await firstAnswer(worker.url, t);
        const t2 = performance.now();
        out.get(t.name)!.startMs.push(t1 - t0);
        out.get(t.name)!.firstMs.push(t2 - t1);
      } finally {
        await worker.dispose();
      }
    }
  }
  return [...out.values()];
}

async function firstAnswer(origin: string, t: ColdTarget): Promise<void> {
  const res = await fetch(origin + t.request.path, {
    method: "POST",
    headers: t.request.headers,
    body: t.request.body,
    signal: AbortSignal.timeout(FIRST_REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  if (!res.ok || !res.headers.has(t.request.expectHeader)) {
    throw new Error(`cold ${t.name}: first request answered ${res.status}: ${text.slice(0, 300)}`);
  }
}

/** Medians (and min–max) per target, then each row against the first (the pass-through). */
export function coldStartReport(results: ColdSamples[]): string[] {
  const n = Math.min(...results.map((r) => r.startMs.length));
  const totals = (r: ColdSamples) => r.startMs.map((s, i) => s + r.firstMs[i]!);
  const cell = (xs: number[]) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`;
  const rows = [
    ["fresh isolate", "start ms", "first response ms", "total ms"],
    ...results.map((r) => [r.name, cell(r.startMs), cell(r.firstMs), cell(totals(r))]),
  ];
  const base = results[0]!;
  const lines = [
    `Time to first response of a fresh isolate: ${n} new workerd per Worker; median (min-max)`,
    ...align(rows, { rule: true }),
  ];
  for (const r of results.slice(1)) {
    const d = (f: (x: ColdSamples) => number[]) => signedMs(median(f(r)) - median(f(base)));
    lines.push(`${r.name} vs ${base.name} (medians): start ${d((x) => x.startMs)} ms, first response ${d((x) => x.firstMs)} ms, total ${d(totals)} ms`);
  }
  return lines;
}

const signedMs = (ms: number) => `${ms >= 0 ? "+" : ""}${ms.toFixed(0)}`;
