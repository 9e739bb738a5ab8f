import { DurableObject } from "cloudflare:workers";
import { MAX_SAMPLES_PER_ROUTE, summarize, trimSamples } from "../../core/routewise/envelope";
import type { Envelope, LatencySample } from "../../core/routewise/types";
import type { EnvelopeSettings, EnvelopeSnapshot, EnvelopeSync, EnvelopeView, RouteSample } from "../../core/routewise/wire";
import { clock } from "./clock";
import { CounterSet } from "../../lib/counters";

const DEMAND_WINDOW_MS = 60_000; // requests per second is judged over the last minute: steadier than a view interval, quick enough for a burst
const DEMAND_BUCKET_MS = 5_000; // twelve buckets per window
const ENVELOPE_CACHE_MS = 1_000; // percentiles are recomputed at most once a second unless samples arrive

/**
 * The latency and token envelope of one RouteWise model's routes (`routewise:<model>`),
 * with its demand and spend. Isolates send it what they served, in batches (src/app/state/
 * routewise/model-agent.ts); it answers each route's percentiles over the window. A
 * quota-bearing model serves only once every route has `envelope_min_samples` here.
 *
 * Storage schema (SQLite):
 *   samples(route TEXT, at INTEGER, ttft REAL, total REAL, prompt INTEGER, output INTEGER, cached INTEGER)
 *     -- one row per served request (or calibration probe), at most MAX_SAMPLES_PER_ROUTE
 *     -- per route, rows past the envelope window deleted as new ones come
 * Memory only, by design:
 *   demand    request counts in DEMAND_BUCKET_MS buckets over the last minute
 *   counters  spend, tokens, hedges and requests by route (Prometheus reads a restart as a reset)
 */
export class RouteEnvelope extends DurableObject {
  #samples = new Map<string, LatencySample[]>();
  #settings: EnvelopeSettings | null = null;
  #cached: { at: number; envelopes: Record<string, Envelope | null> } | null = null;
  #demand = new Map<number, number>();
  #firstSeen: number | null = null;
  #counters = new CounterSet();

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec("CREATE TABLE IF NOT EXISTS samples (route TEXT NOT NULL, at INTEGER NOT NULL, ttft REAL NOT NULL, total REAL NOT NULL, prompt INTEGER NOT NULL, output INTEGER NOT NULL, cached INTEGER NOT NULL)");
      sql.exec("CREATE INDEX IF NOT EXISTS samples_route_at ON samples (route, at)");
      for (const row of sql.exec<{ route: string; at: number; ttft: number; total: number; prompt: number; output: number; cached: number }>("SELECT * FROM samples ORDER BY at")) {
        this.#list(row.route).push({ at: row.at, ttftMs: row.ttft, totalMs: row.total, promptTokens: row.prompt, outputTokens: row.output, cachedTokens: row.cached });
      }
    });
  }

  /** An isolate's batch in; every route's envelope and the model's demand out. */
  async sync(batch: EnvelopeSync): Promise<EnvelopeView> {
    const now = clock.now();
    this.#settings = batch.settings;
    this.#record(batch.samples, now);
    if (batch.requests > 0) {
      const bucket = Math.floor(now / DEMAND_BUCKET_MS);
      this.#demand.set(bucket, (this.#demand.get(bucket) ?? 0) + batch.requests);
    }
    this.#firstSeen ??= now;
    for (const [family, samples] of Object.entries(batch.counters)) for (const s of samples) this.#counters.add(family, s.labels, s.value);
    return this.#view(now);
  }

  /** Seeds samples without traffic: an operator's calibration (probes, or recent traffic replayed from logs). */
  async seed(settings: EnvelopeSettings, samples: RouteSample[]): Promise<EnvelopeView> {
    const now = clock.now();
    this.#settings = settings;
    this.#record(samples, now);
    return this.#view(now);
  }

  async snapshot(): Promise<EnvelopeSnapshot> {
    const now = clock.now();
    const counters: Record<string, EnvelopeSnapshot["counters"][string]> = {};
    for (const family of ["routewise_spend_total", "routewise_tokens_total", "routewise_hedges_total", "routewise_requests_total"]) counters[family] = this.#counters.samples(family);
    return { ...this.#view(now), counters };
  }

  #list(route: string): LatencySample[] {
    let list = this.#samples.get(route);
    if (!list) this.#samples.set(route, (list = []));
    return list;
  }

  #record(samples: readonly RouteSample[], now: number): void {
    if (samples.length === 0) return;
    const sql = this.ctx.storage.sql;
    const windowMs = this.#settings?.windowMs ?? Infinity;
    const touched = new Set<string>();
    this.ctx.storage.transactionSync(() => {
      for (const s of samples) {
        if (!(s.at >= now - windowMs)) continue; // a replayed sample already past the window says nothing now (summarize's bound)
        const { route, ...sample } = s;
        this.#list(route).push(sample);
        touched.add(route);
        sql.exec("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)", route, s.at, s.ttftMs, s.totalMs, s.promptTokens, s.outputTokens, s.cachedTokens);
      }
      for (const route of touched) {
        const list = this.#list(route).sort((a, b) => a.at - b.at);
        const kept = trimSamples(list, now, windowMs, MAX_SAMPLES_PER_ROUTE);
        if (kept.length === list.length) continue;
        this.#samples.set(route, kept);
        // The same rows memory dropped: the oldest, ties in insertion order (the sort is stable).
        sql.exec("DELETE FROM samples WHERE rowid IN (SELECT rowid FROM samples WHERE route = ? ORDER BY at, rowid LIMIT ?)", route, list.length - kept.length);
      }
    });
    if (touched.size > 0) this.#cached = null;
  }

  #view(now: number): EnvelopeView {
    const settings = this.#settings;
    if (!this.#cached || now - this.#cached.at >= ENVELOPE_CACHE_MS) {
      const envelopes: Record<string, Envelope | null> = {};
      for (const route of settings?.routes ?? []) {
        envelopes[route] = settings ? summarize(this.#samples.get(route) ?? [], { percentiles: settings.percentiles, now, windowMs: settings.windowMs, latencyWindowMs: settings.latencyWindowMs }) : null;
      }
      this.#cached = { at: now, envelopes };
    }
    return { envelopes: this.#cached.envelopes, demand: { requestsPerS: this.#requestsPerS(now) } };
  }

  #requestsPerS(now: number): number {
    const from = Math.floor((now - DEMAND_WINDOW_MS) / DEMAND_BUCKET_MS);
    let total = 0;
    for (const [bucket, n] of this.#demand) {
      if (bucket <= from) this.#demand.delete(bucket);
      else total += n;
    }
    // A model seen for less than the window is judged over the time it has been seen.
    const spanMs = Math.min(DEMAND_WINDOW_MS, Math.max(DEMAND_BUCKET_MS, now - (this.#firstSeen ?? now)));
    return total / (spanMs / 1000);
  }
}
