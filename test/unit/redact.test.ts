import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/core/config/load";
import { compileGraphs } from "../../src/core/graph/compile";
import { Redactions } from "../../src/core/config/redact";

/** The redactions of a config that loads, as /routing gets them. */
function redactionsOf(text: string, vars: Record<string, string>) {
  const result = loadConfig(text, vars);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

const pool = (url: string, extra = "") => `models: { m: { pool: p } }\npools: { p: { replicas: [ { id: r, url: "${url}"${extra} } ] } }\n`;

describe("URLs as /routing shows them", () => {
  it("shows a URL as written, with ${VAR} unresolved", () => {
    const { config, redactions } = redactionsOf(pool("https://api.example.com/${TENANT_TOKEN}/v1"), { TENANT_TOKEN: "tok-0123456789abcdef" });
    expect(redactions.url(config.pools.p!.replicas[0]!.url)).toBe("https://api.example.com/${TENANT_TOKEN}/v1");
  });

  it("shows a whole-URL variable as its reference, and a default that was used as itself", () => {
    const set = redactionsOf(pool("${UPSTREAM:-http://10.0.0.1:8000}"), { UPSTREAM: "http://10.9.9.9:8000/v1" });
    expect(set.redactions.url(set.config.pools.p!.replicas[0]!.url)).toBe("${UPSTREAM}");
    const unset = redactionsOf(pool("${UPSTREAM:-http://10.0.0.1:8000}"), {});
    expect(unset.redactions.url(unset.config.pools.p!.replicas[0]!.url)).toBe("http://10.0.0.1:8000");
  });

  it("drops userinfo, query and fragment, written or substituted", () => {
    const literal = redactionsOf(pool("http://user:pw@10.0.0.1:8000/v1"), {});
    expect(literal.redactions.url(literal.config.pools.p!.replicas[0]!.url)).toBe("http://10.0.0.1:8000/v1");
    const fromVar = redactionsOf(pool("http://${CREDS}@10.0.0.1:8000/${PATH_PART}"), { CREDS: "user:secret-password", PATH_PART: "v1" });
    expect(fromVar.redactions.url(fromVar.config.pools.p!.replicas[0]!.url)).toBe("http://10.0.0.1:8000/${PATH_PART}");
  });

  it("follows a variable into a graph step's derived predict URL", () => {
    const text = `
services: { iris: { url: "http://10.0.0.5:8080/\${TOKEN}/" } }
graphs: { g: { nodes: { root: { routerType: Sequence, steps: [ { serviceName: iris } ] } } } }
`;
    const { config, redactions } = redactionsOf(text, { TOKEN: "tok-0123456789abcdef" });
    const step = compileGraphs(config).get("g")!.root.steps[0]!;
    expect(step.target).toEqual({ kind: "service", service: { kind: "url", url: "http://10.0.0.5:8080/tok-0123456789abcdef/v1/models/iris:predict" } });
    const url = step.target.kind === "service" && step.target.service.kind === "url" ? step.target.service.url : "";
    expect(redactions.url(url)).toBe("http://10.0.0.5:8080/${TOKEN}/v1/models/iris:predict");
  });

  it("shows (redacted) for a URL that still holds a secret in any form", () => {
    const r = new Redactions([["s3cr3t value/x", "${S}"]]);
    expect(r.url("http://h/s3cr3t%20value%2Fx/v1")).toBe("(redacted)");
    expect(r.url("http://h/s3cr3t%20value/x/v1")).toBe("(redacted)");
    expect(r.url("http://h/v1")).toBe("http://h/v1");
  });

  it("replaces a short value only where it stands alone", () => {
    const r = new Redactions([["p", "${POOL}"]]);
    expect(r.text('unknown pool "p"')).toBe('unknown pool "${POOL}"');
    expect(r.text("must be a mapping")).toBe("must be a mapping");
    const long = new Redactions([["tok-0123456789", "${T}"]]);
    expect(long.text("https://h/prefixtok-0123456789suffix")).toBe("https://h/prefix${T}suffix");
  });
});
