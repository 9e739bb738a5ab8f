import { describe, expect, it } from "vitest";
import type { MetricSample } from "../../src/lib/prometheus/render";
import { mergeSamples, PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../../src/lib/prometheus/render";

describe("renderPrometheus", () => {
  it("renders HELP, TYPE and one line per sample with labels sorted by name", () => {
    const text = renderPrometheus([
      {
        name: "switchyard_requests_total",
        help: "Requests routed.",
        type: "counter",
        samples: [
          { labels: { status: "200", pool: "chat" }, value: 12 },
          { labels: { pool: "embed", status: "503" }, value: 1 },
        ],
      },
      { name: "switchyard_inflight", help: "Leases held.", type: "gauge", samples: [{ labels: {}, value: 3 }] },
    ]);
    expect(text).toBe(
      [
        "# HELP switchyard_requests_total Requests routed.",
        "# TYPE switchyard_requests_total counter",
        'switchyard_requests_total{pool="chat",status="200"} 12',
        'switchyard_requests_total{pool="embed",status="503"} 1',
        "# HELP switchyard_inflight Leases held.",
        "# TYPE switchyard_inflight gauge",
        "switchyard_inflight 3",
        "",
      ].join("\n"),
    );
  });

  it("prints HELP and TYPE for a family with no samples", () => {
    expect(renderPrometheus([{ name: "x_total", help: "h", type: "counter", samples: [] }])).toBe("# HELP x_total h\n# TYPE x_total counter\n");
  });

  it("renders nothing for no families", () => {
    expect(renderPrometheus([])).toBe("");
  });

  it("escapes label values (backslash, quote, newline) and HELP (backslash, newline only)", () => {
    const text = renderPrometheus([
      { name: "m", help: 'a\\b\n"c"', type: "gauge", samples: [{ labels: { v: 'x\\y"z\nw' }, value: 1 }] },
    ]);
    expect(text).toBe('# HELP m a\\\\b\\n"c"\n# TYPE m gauge\nm{v="x\\\\y\\"z\\nw"} 1\n');
  });

  it("spells special and large numbers the way Prometheus parses them", () => {
    const values = [NaN, Infinity, -Infinity, 0, -0, 1e21, 2 ** 53 + 2, -7, 0.25, 1.5e-7];
    const text = renderPrometheus([{ name: "n", help: "", type: "gauge", samples: values.map((value, i) => ({ labels: { i: String(i) }, value })) }]);
    const rendered = text.trim().split("\n").slice(2).map((line) => line.split(" ")[1]);
    expect(rendered).toEqual(["NaN", "+Inf", "-Inf", "0", "0", "1000000000000000000000", "9007199254740994", "-7", "0.25", "1.5e-7"]);
  });

  it("refuses names the scraper would reject", () => {
    expect(() => renderPrometheus([{ name: "bad-name", help: "", type: "gauge", samples: [] }])).toThrow(/metric name/);
    expect(() => renderPrometheus([{ name: "ok", help: "", type: "gauge", samples: [{ labels: { "bad-label": "v" }, value: 1 }] }])).toThrow(/label name/);
  });

  it("declares the 0.0.4 text content type", () => {
    expect(PROMETHEUS_CONTENT_TYPE).toBe("text/plain; version=0.0.4; charset=utf-8");
  });
});

describe("mergeSamples", () => {
  it("sums samples with identical label sets regardless of key order, keeping first-seen order", () => {
    const input: MetricSample[] = [
      { labels: { pool: "chat", status: "200" }, value: 2 },
      { labels: { pool: "embed", status: "200" }, value: 5 },
      { labels: { status: "200", pool: "chat" }, value: 3 },
      { labels: {}, value: 1 },
      { labels: {}, value: 1 },
    ];
    const snapshot = structuredClone(input);
    expect(mergeSamples(input)).toEqual([
      { labels: { pool: "chat", status: "200" }, value: 5 },
      { labels: { pool: "embed", status: "200" }, value: 5 },
      { labels: {}, value: 2 },
    ]);
    expect(input).toEqual(snapshot); // inputs untouched
  });

  it("keeps label sets that differ only in a value apart", () => {
    const merged = mergeSamples([
      { labels: { a: "1" }, value: 1 },
      { labels: { a: "2" }, value: 1 },
      { labels: { a: "1", b: "" }, value: 1 },
    ]);
    expect(merged).toHaveLength(3);
  });
});
