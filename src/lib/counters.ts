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

/**
 * Monotonic counters by family and label set, kept in a Durable Object's memory. A
 * restart resets them, which Prometheus reads as a counter reset, not as lost traffic.
 */
export class CounterSet {
  #families = new Map<string, Map<string, CounterSample>>();

  add(family: string, labels: Record<string, string>, by = 1): void {
    let samples = this.#families.get(family);
    if (!samples) this.#families.set(family, (samples = new Map()));
    const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
    const sample = samples.get(key);
    if (sample) sample.value += by;
    else samples.set(key, { labels: { ...labels }, value: by });
  }

  samples(family: string): CounterSample[] {
    return [...(this.#families.get(family)?.values() ?? [])].map((s) => ({ labels: { ...s.labels }, value: s.value }));
  }
}
