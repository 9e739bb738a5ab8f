/** Health and metrics paths stay on the replica's origin: refused at load, and refused again by the join. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import { upstreamUrl } from "../../src/core/upstream/url";

const STRAY = ["//other-host/metrics", "/\\other-host/metrics", "/../metrics", "/a/../../metrics", "/%2e%2e/metrics", "/./metrics", "/metrics?x=1", "/metrics#f"];

describe("health_path and metrics.path", () => {
  const doc = (pool: string) => `models: { m: { pool: p } }\npools:\n  p:\n    ${pool}\n    replicas: [ { id: r, url: "https://gw.example.com/team" } ]\n`;
  const errors = (pool: string) => {
    const result = loadConfig(doc(pool), {});
    return result.ok ? [] : result.errors.map((e) => `${e.path}: ${e.message}`);
  };

  it.each(STRAY)("refuses %s, naming the path", (path) => {
    expect(errors(`health_path: ${JSON.stringify(path)}`)).toEqual([expect.stringMatching(/^pools\.p\.health_path: must be a path on the replica's own server/)]);
    expect(errors(`metrics: { scrape_ms: 1000, path: ${JSON.stringify(path)} }`)).toEqual([expect.stringMatching(/^pools\.p\.metrics\.path: must be a path on the replica's own server/)]);
  });

  it("takes ordinary paths", () => {
    expect(errors('health_path: "/v1/health/ready"\n    metrics: { scrape_ms: 1000, path: "/custom/metrics" }')).toEqual([]);
  });
});

describe("the join never leaves the base's origin or root", () => {
  it.each(STRAY.slice(0, 5))("refuses %s whatever the base", (path) => {
    for (const base of ["http://10.0.0.1:8000", "http://10.0.0.1:8000/v1", "https://gw.example.com/team"]) {
      expect(() => upstreamUrl(base, path)).toThrow(/leaves/);
    }
  });

  it("still joins the router's own paths, encoded model names included", () => {
    expect(upstreamUrl("https://gw.example.com/team/v1", "/v2/models/a%2F..%2Fb/infer")).toBe("https://gw.example.com/team/v2/models/a%2F..%2Fb/infer");
    expect(upstreamUrl("http://10.0.0.1:8000", "/metrics")).toBe("http://10.0.0.1:8000/metrics");
  });
});
