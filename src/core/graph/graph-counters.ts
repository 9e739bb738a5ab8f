import type { CounterSample } from "../pool/wire";
import { CounterSet, labelsFromKey, labelsKey } from "../../lib/counters";
import { AppliedLedger } from "../state/applied-ledger";
import type { Acked, BatchedSync } from "../state/batches";

/** Requests to a graph's models by the status the client got: {model, status}. */
export const GRAPH_REQUESTS_FAMILY = "graph_requests_total";
/** Σ ms from each of those requests' arrival to the graph's answer: {model}. */
export const GRAPH_DURATION_FAMILY = "graph_request_duration_ms";
const FAMILIES: ReadonlySet<string> = new Set([GRAPH_REQUESTS_FAMILY, GRAPH_DURATION_FAMILY]);
const MAX_DURATION_SUM_MS = 3_600_000_000; // one batch's Σ of request durations: 1,000 requests of an hour each (as a pool's); past it the report is broken and is left out
const MAX_LABEL_SETS = 10_000; // a graph's models × statuses is a few dozen; past this a batch's new label sets are refused, so a broken isolate cannot grow the object without bound

export interface GraphNews {
  /** Counter increments: family → samples. */
  counters: Record<string, CounterSample[]>;
}
export type GraphCountersSync = BatchedSync<GraphNews>;
export type GraphCountersView = Acked;

/** One counter's total as stored: its family, its label set's key (lib/counters.ts labelsKey), its value. */
export interface StoredGraphCounter {
  family: string;
  key: string;
  value: number;
}

/**
 * The counters of one graph's object as a pure machine: every isolate's batches of
 * request counts and durations per model, each batch applied once (the ledger), the
 * totals stored so /metrics keeps them across restarts. Time comes in as an argument.
 */
export class GraphCountersMachine {
  readonly ledger = new AppliedLedger();
  #counters = new CounterSet();
  /** `family\0labelsKey` of every label set held: the bound counts them. */
  #labelSets = new Set<string>();

  /** A stored total (the object starting); ignored unless a known family, finite and >= 0. */
  restoreCounter(c: StoredGraphCounter): void {
    if (!FAMILIES.has(c.family) || !(Number.isFinite(c.value) && c.value >= 0)) return;
    const labels = labelsFromKey(c.key);
    if (!labels) return;
    this.#labelSets.add(`${c.family}\u0000${labelsKey(labels)}`);
    this.#counters.add(c.family, labels, c.value);
  }

  /** One isolate's exchange: its batches applied once each; what storage must keep out. */
  sync(request: GraphCountersSync, now: number): { view: GraphCountersView; writes: { counters: StoredGraphCounter[]; applied: string | null } } {
    const touched = new Map<string, StoredGraphCounter>();
    for (const batch of this.ledger.accept(request.isolate, request.batches, now)) {
      for (const [family, samples] of Object.entries(batch.counters ?? {})) for (const s of samples) this.#count(family, s.labels, s.value, touched);
    }
    const counters = [...touched.values()];
    return { view: { acked: this.ledger.applied(request.isolate) }, writes: { counters, applied: counters.length > 0 ? request.isolate : null } };
  }

  snapshot(): Record<string, CounterSample[]> {
    return Object.fromEntries([...FAMILIES].map((family) => [family, this.#counters.samples(family)]));
  }

  #count(family: string, labels: Record<string, string>, by: number, touched: Map<string, StoredGraphCounter>): void {
    if (!FAMILIES.has(family) || !(typeof by === "number" && Number.isFinite(by) && by >= 0)) return;
    if (family === GRAPH_DURATION_FAMILY && by > MAX_DURATION_SUM_MS) return;
    const current = this.#counters.total(family, labels);
    if (!Number.isFinite(current + by)) return;
    const set = `${family}\u0000${labelsKey(labels)}`;
    if (!this.#labelSets.has(set)) {
      if (this.#labelSets.size >= MAX_LABEL_SETS) return;
      this.#labelSets.add(set);
    }
    const { key, value } = this.#counters.add(family, labels, by);
    touched.set(`${family}\u0000${key}`, { family, key, value });
  }
}

