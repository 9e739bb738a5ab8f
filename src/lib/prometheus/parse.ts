/**
 * Prometheus text exposition (format 0.0.4), read: the samples a model server's
 * `/metrics` answers with. Only what a router needs: names, labels, values; comments,
 * HELP/TYPE lines and timestamps are skipped. A malformed line is skipped, not fatal:
 * one odd metric must not hide the others. Values are read as written (`NaN`, `+Inf`,
 * `-Inf`, 1e308 included); whether a value is usable is the reader's call.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;

/** A text with more samples than the reader allows: refused whole, since a partial read could miss any series. */
export class PrometheusLimitError extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} samples`);
    this.name = "PrometheusLimitError";
  }
}

/** The samples of `text`; throws PrometheusLimitError past `maxSamples`. */
export function parsePrometheusText(text: string, maxSamples = Number.POSITIVE_INFINITY): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = parseLine(line);
    if (!sample) continue;
    if (samples.length >= maxSamples) throw new PrometheusLimitError(maxSamples);
    samples.push(sample);
  }
  return samples;
}

function parseLine(line: string): Sample | null {
  const name = NAME.exec(line)?.[0];
  if (!name) return null;
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith("{")) {
    const end = parseLabels(rest, labels);
    if (end < 0) return null;
    rest = rest.slice(end);
  }
  const value = parseValue(rest.trim().split(/\s+/)[0] ?? "");
  return value === null ? null : { name, labels, value };
}

/** Reads `{a="x",b="y\"z"}` into `into`; returns the index after `}`, or -1 when malformed. */
function parseLabels(text: string, into: Record<string, string>): number {
  let i = 1;
  for (;;) {
    while (text[i] === " " || text[i] === ",") i++;
    if (text[i] === "}") return i + 1;
    const key = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i))?.[0];
    if (!key) return -1;
    i += key.length;
    if (text[i] !== "=" || text[i + 1] !== '"') return -1;
    i += 2;
    let value = "";
    for (;;) {
      const c = text[i];
      if (c === undefined) return -1;
      if (c === '"') break;
      if (c === "\\") {
        const next = text[i + 1];
        value += next === "n" ? "\n" : (next ?? "");
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    into[key] = value;
    i++;
  }
}

function parseValue(text: string): number | null {
  if (text === "") return null;
  const value = Number(text);
  // A number too big for a double (1e309) is +Inf, as Go's exporters would read it: the
  // value is known to be out of range, not the line malformed, so the reader can drop that
  // metric alone. The text format's own +Inf, -Inf and NaN, in any case (Go's spelling).
  if (!Number.isNaN(value)) return value;
  if (/^[+-]?inf(inity)?$/i.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  return /^nan$/i.test(text) ? NaN : null;
}
