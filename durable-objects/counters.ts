import type { CounterSample } from "../src/state/types";

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
