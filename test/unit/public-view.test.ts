import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";

describe("routing.public_view", () => {
  const doc = (url: string, routing = "", extra = "") => `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: a, url: "https://api.example.com/v1" }, { id: b, url: "${url}" } ] } }\n${routing}${extra}`;
  const publicView = (text: string) => {
    const result = loadConfig(text, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    return result.config.routing.public_view;
  };

  // It used to default to true when every upstream URL was public: the view then showed prices, budgets,
  // quotas, the usage API's URL, errors and grants to anyone. Those are operational wherever the upstreams live.
  it("defaults to false, whether the upstream URLs are public or private", () => {
    expect(publicView(doc("https://other.example.com"))).toBe(false);
    expect(publicView(doc("http://10.0.0.5:8000"))).toBe(false);
    expect(publicView(doc("https://other.example.com", "", 'services: { s: { url: "https://svc.example.com" } }\n'))).toBe(false);
  });

  it("takes an explicit setting either way", () => {
    expect(publicView(doc("http://10.0.0.5:8000", "routing: { public_view: true }\n"))).toBe(true);
    expect(publicView(doc("https://other.example.com", "routing: { public_view: false }\n"))).toBe(false);
    expect(loadConfig(doc("https://other.example.com", "routing: { public_view: yes please }\n"), {})).toMatchObject({ ok: false, errors: [{ path: "routing.public_view", message: "must be a boolean, got a string" }] });
  });
});
