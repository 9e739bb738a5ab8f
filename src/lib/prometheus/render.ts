/**
 * Prometheus text exposition format 0.0.4, rendered from plain data so the /metrics
 * surface stays a pure function of whatever the Durable Objects report.
 * Reference: https://prometheus.io/docs/instrumenting/exposition_formats/
 */

export interface MetricSample {
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: "counter" | "gauge";
  samples: MetricSample[];
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

// Names outside these grammars make the scraper reject the whole page, so a bad name is a
// bug to surface at once rather than a line to emit.
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export function renderPrometheus(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    if (!METRIC_NAME.test(family.name)) throw new Error(`invalid Prometheus metric name: ${JSON.stringify(family.name)}`);
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) lines.push(`${family.name}${renderLabels(sample.labels)} ${formatValue(sample.value)}`);
  }
  return lines.map((line) => `${line}\n`).join("");
}

/** Sums samples whose label sets are identical (e.g. one counter reported by several Durable Objects); first-seen order. */
export function mergeSamples(samples: readonly MetricSample[]): MetricSample[] {
  const merged = new Map<string, MetricSample>();
  for (const sample of samples) {
    const key = JSON.stringify(sortedEntries(sample.labels));
    const existing = merged.get(key);
    if (existing) existing.value += sample.value;
    else merged.set(key, { labels: { ...sample.labels }, value: sample.value });
  }
  return [...merged.values()];
}

function sortedEntries(labels: Record<string, string>): [string, string][] {
  // Code-unit order, not localeCompare: output must not depend on the runtime's locale.
  return Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function renderLabels(labels: Record<string, string>): string {
  const entries = sortedEntries(labels);
  if (entries.length === 0) return "";
  const parts = entries.map(([name, value]) => {
    if (!LABEL_NAME.test(name)) throw new Error(`invalid Prometheus label name: ${JSON.stringify(name)}`);
    return `${name}="${escapeLabelValue(value)}"`;
  });
  return `{${parts.join(",")}}`;
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function escapeLabelValue(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Go's ParseFloat spellings for the specials; integers in full digits (String(1e21) would give "1e+21"). */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  if (Number.isInteger(value)) return BigInt(value).toString(); // also maps -0 to "0"
  return String(value); // fractional: shortest round-trip form, which Prometheus parses
}
