import { describe, expect, it } from "vitest";
import { failureReply, retryAfterSeconds } from "../../src/core/upstream/attempts";
import { clientResponseHeaders, upstreamRequestHeaders } from "../../src/core/upstream/headers";
import { upstreamUrl } from "../../src/core/upstream/url";

describe("upstreamUrl", () => {
  it("appends the API path to a server root", () => {
    expect(upstreamUrl("http://10.0.0.5:8000", "/v1/chat/completions")).toBe("http://10.0.0.5:8000/v1/chat/completions");
    expect(upstreamUrl("http://10.0.0.5:8000/", "/v1/embeddings")).toBe("http://10.0.0.5:8000/v1/embeddings");
  });
  it("does not double a /v1 prefix written into the base", () => {
    expect(upstreamUrl("https://api.example.com/v1", "/v1/chat/completions")).toBe("https://api.example.com/v1/chat/completions");
    expect(upstreamUrl("https://gw.example.com/team/v1/", "/v1/completions")).toBe("https://gw.example.com/team/v1/completions");
  });
  it("keeps other path prefixes", () => {
    expect(upstreamUrl("https://gw.example.com/openai", "/v1/completions")).toBe("https://gw.example.com/openai/v1/completions");
  });
  it("joins every other path (health, metrics, KServe v2) to the server root: the base without its /v1", () => {
    expect(upstreamUrl("http://10.0.0.5:8000/v1", "/health")).toBe("http://10.0.0.5:8000/health");
    expect(upstreamUrl("https://gw.example.com/team/v1", "/metrics")).toBe("https://gw.example.com/team/metrics");
    expect(upstreamUrl("http://10.0.0.5:8000/v1/", "/v2/models/m/infer")).toBe("http://10.0.0.5:8000/v2/models/m/infer");
    expect(upstreamUrl("https://gw.example.com/team", "/health")).toBe("https://gw.example.com/team/health");
    expect(upstreamUrl("http://10.0.0.5:8000", "/v1/models/m%2Fx:predict")).toBe("http://10.0.0.5:8000/v1/models/m%2Fx:predict");
  });
});

describe("header filtering", () => {
  it("drops hop-by-hop, connection-listed and router-owned request headers and injects the replica key", () => {
    const incoming = new Headers({
      authorization: "Bearer client-key",
      connection: "keep-alive, x-private-hop",
      "x-private-hop": "1",
      "keep-alive": "timeout=5",
      te: "trailers",
      "x-route-pin": "replica-b",
      "x-switchyard-admin": "1",
      cookie: "session=1",
      "cf-connecting-ip": "203.0.113.9",
      "content-length": "12",
      "openai-organization": "org-1",
      "x-request-id": "abc",
    });
    const out = upstreamRequestHeaders(incoming);
    expect(Object.fromEntries(out)).toEqual({
      "content-type": "application/json",
      "openai-organization": "org-1",
      "x-request-id": "abc",
    });
  });

  it("never forwards the client's credentials from a pool request (a replica gets its own api_key in the engine)", () => {
    const out = upstreamRequestHeaders(new Headers({ authorization: "Bearer client-key", "x-api-key": "client-key", "api-key": "azure-style" }));
    expect([...out.keys()]).toEqual(["content-type"]);
  });

  it("drops headers that would have a server or proxy take the request for another method, path or host", () => {
    const overrides = ["x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url", "x-original-uri", "x-forwarded-uri", "x-forwarded-path", "x-forwarded-prefix", "x-envoy-original-path", "x-forwarded-host", "x-original-host", "x-host", "x-forwarded-server", "forwarded"];
    const out = upstreamRequestHeaders(new Headers([...overrides.map((name) => [name, "x"] as [string, string]), ["x-kept", "1"]]));
    expect(Object.fromEntries(out)).toEqual({ "content-type": "application/json", "x-kept": "1" });
  });

  it("keeps the client's Content-Encoding for a body passed on as is, drops it for a body the router re-encoded", () => {
    const incoming = new Headers({ "content-encoding": "gzip", "content-type": "application/octet-stream" });
    expect(upstreamRequestHeaders(incoming).get("content-encoding")).toBe("gzip");
    expect(upstreamRequestHeaders(incoming).get("content-type")).toBe("application/octet-stream");
    const rewritten = upstreamRequestHeaders(incoming, { bodyRewritten: true, contentType: "application/json" });
    expect(rewritten.has("content-encoding")).toBe(false);
    expect(rewritten.get("content-type")).toBe("application/json");
  });

  it("selects names for graph steps, keeping credentials only when asked, and never the hop-by-hop or router-owned ones", () => {
    const incoming = new Headers({ authorization: "Bearer user-token", cookie: "s=1", "x-b3-traceid": "t", connection: "x-b3-traceid", "x-other": "o" });
    const select = (name: string) => name !== "x-other";
    expect(Object.fromEntries(upstreamRequestHeaders(incoming, { select, keepCredentials: true }))).toEqual({ authorization: "Bearer user-token", "content-type": "application/json" });
    expect(upstreamRequestHeaders(incoming, { select, keepCredentials: false }).has("authorization")).toBe(false);
  });

  it("strips hop-by-hop and spoofed router headers from responses", () => {
    const out = clientResponseHeaders(
      new Headers({ "content-type": "text/event-stream", "transfer-encoding": "chunked", "x-switchyard-replica": "spoof", "x-upstream": "1" }),
    );
    expect(Object.fromEntries(out)).toEqual({ "content-type": "text/event-stream", "x-upstream": "1" });
  });

  it("drops what an upstream says to the router's origin: its cookies and its 401 challenge", () => {
    const upstream = new Headers([["set-cookie", "__cf_bm=abc; Path=/"], ["set-cookie", "session=1"], ["www-authenticate", 'Bearer realm="upstream"'], ["x-request-id", "r1"]]);
    expect(Object.fromEntries(clientResponseHeaders(upstream))).toEqual({ "x-request-id": "r1" });
    const browserFacing = {
      "clear-site-data": '"*"',
      "alt-svc": 'h3=":443"',
      "strict-transport-security": "max-age=31536000",
      refresh: "0; url=http://evil.example/",
      link: "<http://evil.example/x.js>; rel=preload",
      location: "http://evil.example/",
      "content-security-policy": "default-src *",
      "x-frame-options": "ALLOWALL",
      "service-worker-allowed": "/",
      "access-control-allow-origin": "*",
      "access-control-allow-credentials": "true",
      "set-login": "logged-in",
      "accept-ch": "Sec-CH-UA-Model",
      "cross-origin-opener-policy-report-only": "same-origin",
      "origin-trial": "token",
    };
    expect(Object.fromEntries(clientResponseHeaders(new Headers({ ...browserFacing, "x-request-id": "r2" })))).toEqual({ "x-request-id": "r2" });
  });
});

describe("failureReply", () => {
  const attempt = (outcome: Parameters<typeof failureReply>[1][number]["outcome"]) => ({ replica: "r1", outcome, ms: 5 });
  it("maps the last cause to 502/503/504", () => {
    expect(failureReply("m", [attempt({ kind: "timeout" })], false).status).toBe(504);
    expect(failureReply("m", [attempt({ kind: "connect_error", message: "refused" })], false)).toMatchObject({ status: 502, code: "upstream_unreachable" });
    expect(failureReply("m", [attempt({ kind: "retryable_status", status: 500 })], false)).toMatchObject({ status: 502, code: "upstream_error" });
    expect(failureReply("m", [attempt({ kind: "retryable_status", status: 429 })], false)).toMatchObject({ status: 503, code: "upstream_unavailable" });
    expect(failureReply("m", [attempt({ kind: "retryable_status", status: 503 })], true)).toMatchObject({ status: 504 });
    expect(failureReply("m", [], true)).toMatchObject({ status: 504, code: "deadline_exceeded" });
    // A client that left while a try had answered its headers but sent no chunk yet: it got nothing, a 499.
    expect(failureReply("m", [attempt({ kind: "answered", status: 200 })], false, true)).toMatchObject({ status: 499, code: "client_closed_request" });
    // Nothing tried and no deadline passed (no target could be had): not a 504 blaming the deadline.
    expect(failureReply("m", [], false)).toEqual({ status: 503, code: "upstream_unavailable", message: 'No replica for model "m" could be tried' });
  });
  it("names the replica and the cause", () => {
    const reply = failureReply("llama", [attempt({ kind: "timeout" }), { replica: "r2", outcome: { kind: "retryable_status", status: 502 }, ms: 1 }], false);
    expect(reply.message).toBe('No replica for model "llama" succeeded after 2 attempts; last: replica "r2" answered 502');
  });
});

describe("retryAfterSeconds", () => {
  it("reads seconds and HTTP dates, bounds them at an hour, and drops what it cannot use", () => {
    const now = Date.parse("2026-11-29T12:00:00Z");
    expect(retryAfterSeconds("7", now)).toBe(7);
    expect(retryAfterSeconds(" 0 ", now)).toBe(0);
    expect(retryAfterSeconds("Sun, 29 Nov 2026 12:00:30 GMT", now)).toBe(30);
    expect(retryAfterSeconds("999999", now)).toBe(3_600);
    for (const bad of [null, "", "-5", "1.5", "soon", "Sun, 29 Nov 2026 11:00:00 GMT"]) expect(retryAfterSeconds(bad, now), String(bad)).toBeUndefined();
  });
});
