import { CounterSet, labelsFromKey } from "../../lib/counters";
import type { CircuitState } from "../health/circuit";
import { durablyDifferent } from "../health/circuit";
import { AppliedLedger } from "../state/applied-ledger";
import { plausibleSample } from "./bounds";
import { MAX_SAMPLES_PER_ROUTE, summarize, trimSamples } from "./envelope";
import type { RouteTransition } from "./route-circuits";
import { foldVerdicts } from "./route-circuits";
import type { Envelope, LatencySample } from "./types";
import type { EnvelopeSettings, EnvelopeSnapshot, EnvelopeState, EnvelopeSync, EnvelopeView, RouteSample } from "./wire";

const DEMAND_WINDOW_MS = 60_000; // requests per second is judged over the last minute: steadier than a view interval, quick enough for a burst
const DEMAND_BUCKET_MS = 5_000; // twelve buckets per window
const ENVELOPE_CACHE_MS = 1_000; // percentiles are recomputed at most once a second unless samples arrive

/** Counter families the isolates send (src/app/state/routewise/model-agent.ts) and /metrics reads. */
export const ROUTEWISE_COUNTER_FAMILIES = [
  "routewise_spend_total",
  "routewise_tokens_total",
  "routewise_hedges_total",
  "routewise_requests_total",
  "routewise_discarded_total",
  "routewise_model_requests_total",
  "routewise_request_duration_ms",
] as const;

/** Σ ms from each request's arrival to its end, beside the model's requests by status: the mean latency is one over the other. */
export const DURATION_FAMILY = "routewise_request_duration_ms";
const MAX_DURATION_SUM_MS = 3_600_000_000; // one batch's Σ of request durations: 1,000 requests of an hour each (as a pool's); past it the report is broken and is left out

/** Numbers refused as implausible (src/core/routewise/bounds.ts), by route and what they were: a provider's `usage`, or a latency `sample`. */
export const DISCARDED_FAMILY = "routewise_discarded_total";

const FAMILIES: ReadonlySet<string> = new Set(ROUTEWISE_COUNTER_FAMILIES);

/** What one call changed that storage must keep: the object writes it in one transaction. */
export interface EnvelopeWrites {
  /** New sample rows. */
  samples: RouteSample[];
  /** Per route, how many of its oldest rows to delete (ties in insertion order). */
  trimmed: Map<string, number>;
  /** Route circuits whose phase or timers changed. */
  circuits: Map<string, CircuitState>;
  /** Counters a batch changed: their new totals, by family and label key (lib/counters.ts labelsKey). */
  counters: StoredCounter[];
  /** The isolate whose applied seq goes in the same transaction (null: no batch wrote anything). */
  applied: string | null;
  /** Circuit transitions, for the log. */
  transitions: RouteTransition[];
}

/** One counter's total as stored: its family, its label set's key, its value. */
export interface StoredCounter {
  family: string;
  key: string;
  value: number;
}

const noWrites = (): EnvelopeWrites => ({ samples: [], trimmed: new Map(), circuits: new Map(), counters: [], applied: null, transitions: [] });

/**
 * The state of one RouteWise model's envelope object as a pure machine: per-route
 * latency samples and their percentiles, the routes' shared circuits, the model's demand,
 * its counters (spend, tokens, hedges, requests: stored, so /metrics keeps them across
 * restarts), and which batches of each isolate it has applied. Time comes in as an
 * argument; what must be stored comes out as `EnvelopeWrites` for the object's storage
 * adapter (src/platform/objects/route-envelope.ts).
 */
export class EnvelopeMachine {
  readonly ledger = new AppliedLedger();
  #samples = new Map<string, LatencySample[]>();
  #settings: EnvelopeSettings | null = null;
  #cached: { at: number; envelopes: Record<string, Envelope | null> } | null = null;
  #demand = new Map<number, number>();
  #firstSeen: number | null = null;
  #counters = new CounterSet();
  #circuits = new Map<string, CircuitState>();

  /** A stored sample (the object starting); rows come oldest first. One that cannot be believed is left out (and counted), so no stored row can poison the envelope. */
  restoreSample(route: string, sample: LatencySample, now: number): void {
    if (plausibleSample(sample, now)) this.#list(route).push(sample);
    else this.#counters.add(DISCARDED_FAMILY, { route, what: "sample" }, 1);
  }

  /** A stored counter total (the object starting); ignored unless a known family, finite and >= 0. */
  restoreCounter(c: StoredCounter): void {
    if (!FAMILIES.has(c.family) || !(Number.isFinite(c.value) && c.value >= 0)) return;
    const labels = labelsFromKey(c.key);
    if (!labels) return;
    this.#counters.add(c.family, labels, c.value);
  }

  /** A stored route circuit (the object starting). */
  restoreCircuit(route: string, state: CircuitState): void {
    this.#circuits.set(route, state);
  }

  /** One isolate's exchange: its batches applied once each, the model's state out. */
  sync(request: EnvelopeSync, now: number): { view: EnvelopeView; writes: EnvelopeWrites } {
    this.#adoptSettings(request.settings);
    this.#firstSeen ??= now;
    const writes = noWrites();
    const touched = new Map<string, StoredCounter>();
    const fresh = this.ledger.accept(request.isolate, request.batches, now);
    const routes = new Set(request.settings.routes);
    for (const batch of fresh) {
      if (batch.requests > 0) {
        const bucket = Math.floor(now / DEMAND_BUCKET_MS);
        this.#demand.set(bucket, (this.#demand.get(bucket) ?? 0) + batch.requests);
      }
      for (const [family, samples] of Object.entries(batch.counters)) for (const s of samples) this.#count(family, s.labels, s.value, touched);
      const { changed, transitions } = foldVerdicts(this.#circuits, batch.verdicts, routes);
      for (const [route, state] of changed) {
        const before = this.#circuits.get(route);
        this.#circuits.set(route, state);
        if (!before || durablyDifferent(before, state)) writes.circuits.set(route, state);
      }
      writes.transitions.push(...transitions);
    }
    this.#record(fresh.flatMap((b) => b.samples), now, writes);
    writes.counters = [...touched.values()];
    if (writes.samples.length > 0 || writes.circuits.size > 0 || writes.counters.length > 0) writes.applied = request.isolate;
    return { view: { ...this.#state(now), acked: this.ledger.applied(request.isolate) }, writes };
  }

  /** Samples without traffic: an operator's calibration (probes, or recent traffic replayed from logs). */
  seed(settings: EnvelopeSettings, samples: readonly RouteSample[], now: number): { state: EnvelopeState; writes: EnvelopeWrites } {
    this.#adoptSettings(settings);
    const writes = noWrites();
    this.#record(samples, now, writes);
    return { state: this.#state(now), writes };
  }

  snapshot(now: number): EnvelopeSnapshot {
    const counters: EnvelopeSnapshot["counters"] = {};
    for (const family of ROUTEWISE_COUNTER_FAMILIES) counters[family] = this.#counters.samples(family);
    return { ...this.#state(now), counters };
  }

  /**
   * Adds one counter sample from a batch. Only a finite, non-negative amount that keeps
   * the total finite is added: a counter never goes down, and a stored total is a number.
   */
  #count(family: string, labels: Record<string, string>, by: number, touched: Map<string, StoredCounter>): void {
    if (!FAMILIES.has(family) || !(typeof by === "number" && Number.isFinite(by) && by >= 0)) return;
    if (family === DURATION_FAMILY && by > MAX_DURATION_SUM_MS) return;
    const current = this.#counters.total(family, labels);
    if (!Number.isFinite(current + by)) return;
    const { key, value } = this.#counters.add(family, labels, by);
    touched.set(`${family}\u0000${key}`, { family, key, value });
  }

  #list(route: string): LatencySample[] {
    let list = this.#samples.get(route);
    if (!list) this.#samples.set(route, (list = []));
    return list;
  }

  #record(samples: readonly RouteSample[], now: number, writes: EnvelopeWrites): void {
    const windowMs = this.#settings?.windowMs ?? Infinity;
    const touched = new Set<string>();
    for (const s of samples) {
      if (!(s.at >= now - windowMs)) continue; // a replayed sample already past the window says nothing now (summarize's bound)
      const { route, ...sample } = s;
      if (!plausibleSample(sample, now)) {
        this.#counters.add(DISCARDED_FAMILY, { route, what: "sample" }, 1);
        continue; // never stored: a broken number would outlive a restart
      }
      this.#list(route).push(sample);
      touched.add(route);
      writes.samples.push(s);
    }
    for (const route of touched) {
      const list = this.#list(route).sort((a, b) => a.at - b.at);
      const kept = trimSamples(list, now, windowMs, MAX_SAMPLES_PER_ROUTE);
      if (kept.length === list.length) continue;
      this.#samples.set(route, kept);
      // The same rows memory dropped: the oldest, ties in insertion order (the sort is stable).
      writes.trimmed.set(route, list.length - kept.length);
    }
    if (touched.size > 0) this.#cached = null;
  }

  /**
   * The settings a sync or a calibration brings (memory only: a restarted object has none
   * until one comes). Percentiles worked out under other routes, or under none, are dropped.
   */
  #adoptSettings(settings: EnvelopeSettings): void {
    const before = this.#settings;
    this.#settings = settings;
    if (!before || before.routes.join("\n") !== settings.routes.join("\n") || before.windowMs !== settings.windowMs || before.latencyWindowMs !== settings.latencyWindowMs || before.percentiles.join(",") !== settings.percentiles.join(",")) this.#cached = null;
  }

  #state(now: number): EnvelopeState {
    const settings = this.#settings;
    if (!this.#cached || now - this.#cached.at >= ENVELOPE_CACHE_MS) {
      const envelopes: Record<string, Envelope | null> = {};
      for (const route of settings?.routes ?? []) {
        envelopes[route] = settings ? summarize(this.#samples.get(route) ?? [], { percentiles: settings.percentiles, now, windowMs: settings.windowMs, latencyWindowMs: settings.latencyWindowMs }) : null;
      }
      // Without settings (a read before the first sync since a restart) there are no routes to
      // summarize: not kept, or the next sync within the second would be told of no samples.
      if (!settings) return { envelopes, demand: { requestsPerS: this.#requestsPerS(now) }, circuits: {} };
      this.#cached = { at: now, envelopes };
    }
    const circuits: Record<string, CircuitState> = {};
    for (const route of settings?.routes ?? []) {
      const circuit = this.#circuits.get(route);
      if (circuit) circuits[route] = circuit;
    }
    return { envelopes: this.#cached.envelopes, demand: { requestsPerS: this.#requestsPerS(now) }, circuits };
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
