/** One counter of a family: its labels and value. */
export interface CounterSample {
  labels: Record<string, string>;
  value: number;
}

/**
 * Counts by a fixed list of label names, keyed by their joined values: the isolate adds
 * to it on every request, so it avoids building and sorting label objects each time.
 */
export class Tally {
  #samples = new Map<string, CounterSample>();

  constructor(private readonly names: readonly string[]) {}

  add(values: readonly string[], by = 1): void {
    const key = values.join("\u0000");
    const sample = this.#samples.get(key);
    if (sample) {
      sample.value += by;
      return;
    }
    const labels: Record<string, string> = {};
    this.names.forEach((name, i) => (labels[name] = values[i]!));
    this.#samples.set(key, { labels, value: by });
  }

  get empty(): boolean {
    return this.#samples.size === 0;
  }

  /** Counts drained earlier, put back (a report that could not be sent). */
  restore(samples: readonly CounterSample[]): void {
    for (const s of samples) this.add(this.names.map((name) => s.labels[name] ?? ""), s.value);
  }

  /** The counts so far, and a fresh start. */
  drain(): CounterSample[] {
    const out = [...this.#samples.values()];
    this.#samples = new Map();
    return out;
  }
}

/** A label set's key in a CounterSet: its entries sorted by name, as JSON (also how a store can keep it). */
export const labelsKey = (labels: Record<string, string>): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));

/** A label set back from its key as stored; null when the text is not one. */
export function labelsFromKey(key: string): Record<string, string> | null {
  try {
    const entries: unknown = JSON.parse(key);
    return Array.isArray(entries) ? (Object.fromEntries(entries as [string, string][]) as Record<string, string>) : null;
  } catch {
    return null;
  }
}

/**
 * Monotonic counters by family and label set, kept in a Durable Object's memory. An
 * object that must keep them across restarts stores what `add` returns and adds it back
 * on start; one that does not loses them, which Prometheus reads as a counter reset.
 */
export class CounterSet {
  #families = new Map<string, Map<string, CounterSample>>();

  /** Adds `by`; returns the label set's key and its new total. */
  add(family: string, labels: Record<string, string>, by = 1): { key: string; value: number } {
    let samples = this.#families.get(family);
    if (!samples) this.#families.set(family, (samples = new Map()));
    const key = labelsKey(labels);
    const sample = samples.get(key);
    if (sample) sample.value += by;
    else samples.set(key, { labels: { ...labels }, value: by });
    return { key, value: sample ? sample.value : by };
  }

  /** The total of one label set (0 when never added to). */
  total(family: string, labels: Record<string, string>): number {
    return this.#families.get(family)?.get(labelsKey(labels))?.value ?? 0;
  }

  samples(family: string): CounterSample[] {
    return [...(this.#families.get(family)?.values() ?? [])].map((s) => ({ labels: { ...s.labels }, value: s.value }));
  }
}
