/**
 * What reaches a model server: only what the header policy allows, never the router's own
 * credential, on a path the router builds itself. (Bad input on every surface is the
 * conformance table's: test/support/conformance.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { post, publish } from "../support/router";

const CLIENT = { authorization: "Bearer sk-from-secret" }; // TEST_CLIENT_KEY in vitest.config.ts
let echo: FleetServer;
let kserve: FleetServer;
beforeAll(async () => {
  [echo, kserve] = await Promise.all([spawnServer({}, "hygiene-openai"), spawnServer({ reply: { body: { predictions: [1] } } }, "hygiene-kserve")]);
  await publish(`auth:
  client_keys: ["\${TEST_CLIENT_KEY}"]
models:
  chat: { pool: openai, upstream_model: served-chat }
  iris: { pool: kserve, upstream_model: sklearn-iris }
pools:
  openai:
    replicas: [{ id: echo, url: "${echo.url}" }]
  kserve:
    replicas: [{ id: kserve, url: "${kserve.url}" }]
routing: { shared_state: false }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: guarded
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - serviceUrl: ${kserve.url}
`);
});
afterAll(async () => {
  await Promise.all([echo.close(), kserve.close()]);
});

const lastRequest = async (server: FleetServer) => (await server.stats()).recent.at(-1)!;

describe("what reaches a replica", () => {
  it("no client credential, no method/path/host override, no Content-Encoding for a body the router re-encoded", async () => {
    const res = await post(
      "/v1/chat/completions",
      { model: "chat", messages: [] },
      {
        ...CLIENT,
        "x-api-key": "sk-client",
        "x-http-method-override": "DELETE",
        "x-original-url": "/admin",
        "x-rewrite-url": "/admin",
        "x-forwarded-host": "internal.example",
        forwarded: "for=1.2.3.4;host=evil.example;proto=https",
        "x-forwarded-prefix": "/admin",
        "api-key": "azure-style",
        "content-encoding": "identity",
        "x-request-id": "kept",
      },
    );
    expect(res.status).toBe(200);
    const seen = (await lastRequest(echo)).headers;
    for (const name of ["authorization", "x-api-key", "api-key", "x-http-method-override", "x-original-url", "x-rewrite-url", "x-forwarded-host", "forwarded", "x-forwarded-prefix", "content-encoding"]) {
      expect(seen[name], name).toBeUndefined();
    }
    expect(seen["x-request-id"]).toBe("kept");
  });

  it("on the KServe surfaces, a path built from the model the pool serves, never the client's path", async () => {
    for (const [clientPath, upstreamPath] of [
      ["/v1/models/iris:predict", "/v1/models/sklearn-iris:predict"],
      ["/v1/models/ir%69s:predict", "/v1/models/sklearn-iris:predict"],
      ["/v2/models/iris/infer", "/v2/models/sklearn-iris/infer"],
    ] as const) {
      const res = await post(clientPath, { instances: [[1, 2]] }, CLIENT);
      expect(res.status, clientPath).toBe(200);
      expect((await lastRequest(kserve)).path, clientPath).toBe(upstreamPath);
    }
  });

  it("a Messages request translated for a chat replica leaves its anthropic-* headers behind", async () => {
    const res = await post("/v1/messages", { model: "chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }, { ...CLIENT, "anthropic-version": "2023-06-01", "anthropic-beta": "prompt-caching-2024-07-31", "x-request-id": "kept" });
    expect(res.status).toBe(200);
    const seen = (await lastRequest(echo)).headers;
    expect([seen["anthropic-version"], seen["anthropic-beta"], seen["x-request-id"]]).toEqual([undefined, undefined, "kept"]);
  });

  it("a graph step never gets the router's own client key", async () => {
    expect((await post("/graphs/guarded", {}, CLIENT)).status).toBe(200);
    expect((await lastRequest(kserve)).headers.authorization).toBeUndefined();
  });
});
