import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import { isPrivateUrl } from "../../src/core/config/private-hosts";

describe("private upstream URLs", () => {
  it.each([
    "http://127.0.0.1:8000", "http://127.9.9.9", "http://localhost:8000", "http://api.localhost", "http://[::1]:8000",
    "http://10.0.0.5:8000/v1", "http://172.16.0.1", "http://172.31.255.255", "http://192.168.1.10",
    "http://169.254.169.254/latest", "http://[fe80::1]", "http://100.64.0.1", "http://0.0.0.0:8000", "http://[::]",
    "http://[fd00::1]", "http://[fc12:3456::1]", "http://[::ffff:10.0.0.1]", "http://[::ffff:127.0.0.1]",
    "http://vllm:8000", "http://gpu-7.internal:8000", "http://model.local", "http://nas.home.arpa", "http://gpu.local.",
    "http://2130706433", "http://0x0a000001", // the URL parser's other spellings of 127.0.0.1 and 10.0.0.1
  ])("%s is private", (url) => {
    expect(isPrivateUrl(url)).toBe(true);
  });

  it.each([
    "https://api.openai.com/v1", "http://8.8.8.8", "http://172.32.0.1", "http://172.15.0.1", "http://192.169.0.1",
    "http://100.128.0.1", "http://[2001:db8::1]", "http://[::ffff:8.8.8.8]", "https://internal.example.com", "https://example.local.example.com",
  ])("%s is public", (url) => {
    expect(isPrivateUrl(url)).toBe(false);
  });
});

describe("routing.public_view", () => {
  const doc = (url: string, routing = "", extra = "") => `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: a, url: "https://api.example.com/v1" }, { id: b, url: "${url}" } ] } }\n${routing}${extra}`;
  const publicView = (text: string) => {
    const result = loadConfig(text, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    return result.config.routing.public_view;
  };

  it("defaults to false when any replica, service or graph step URL is private, else true", () => {
    expect(publicView(doc("https://other.example.com"))).toBe(true);
    expect(publicView(doc("http://10.0.0.5:8000"))).toBe(false);
    expect(publicView(doc("https://other.example.com", "", 'services: { s: { url: "http://vllm:8080" } }\n'))).toBe(false);
    expect(publicView(doc("https://other.example.com", "", 'graphs: { g: { nodes: { root: { routerType: Sequence, steps: [ { serviceUrl: "http://192.168.0.9/p" } ] } } } }\n'))).toBe(false);
    expect(publicView(doc("https://other.example.com", "", 'graphs: { g: { nodes: { root: { routerType: Router, router: { type: external, serviceUrl: "http://[fd00::1]/route" }, steps: [ { serviceUrl: "https://x.example.com" } ] } } } }\n'))).toBe(false);
  });

  it("takes an explicit setting either way", () => {
    expect(publicView(doc("http://10.0.0.5:8000", "routing: { public_view: true }\n"))).toBe(true);
    expect(publicView(doc("https://other.example.com", "routing: { public_view: false }\n"))).toBe(false);
    expect(loadConfig(doc("https://other.example.com", "routing: { public_view: yes please }\n"), {})).toMatchObject({ ok: false, errors: [{ path: "routing.public_view", message: "must be a boolean, got a string" }] });
  });

  it("is judged on the URLs the Worker resolves from ${VAR}", () => {
    const text = `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: a, url: "\${UPSTREAM}" } ] } }\n`;
    const of = (upstream: string) => {
      const result = loadConfig(text, { UPSTREAM: upstream });
      return result.ok && result.config.routing.public_view;
    };
    expect(of("https://api.example.com")).toBe(true);
    expect(of("http://10.1.2.3:8000")).toBe(false);
  });
});
