/**
 * Bad input and request hygiene on every surface, each answered in its own shape (OpenAI,
 * KServe protocol, KServe graph, Seldon): malformed percent-encoding and bodies that
 * cannot be read are the client's 400s, never the router's 500s; JSON nested past the
 * documented depth is refused; what reaches a replica is only what the header policy
 * allows, on a path the router builds itself.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/lib/json";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { post, publish, routerFetch } from "../support/router";

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
const shapes = {
  openai: async (res: Response) => ((await res.json()) as { error: { code: string; message: string } }).error,
  kserveProtocol: async (res: Response) => (await res.json()) as { error: string },
  kserveGraph: async (res: Response) => (await res.json()) as { error: string; cause: string },
  seldon: async (res: Response) => ((await res.json()) as { status: { code: number; status: string; info: string } }).status,
};

describe("malformed percent-encoding in the path", () => {
  const paths = [
    { path: "/graphs/%zz", check: async (res: Response) => expect(await shapes.kserveGraph(res)).toMatchObject({ error: "Failed to process request", cause: expect.stringContaining("percent-encoding") }) },
    { path: "/v1/models/%E0%A4%A:predict", check: async (res: Response) => expect((await shapes.kserveProtocol(res)).error).toContain("percent-encoding") },
    { path: "/v2/models/%zz/infer", check: async (res: Response) => expect((await shapes.kserveProtocol(res)).error).toContain("percent-encoding") },
  ];

  it.each(paths)("$path is a 400 in the surface's shape, after authentication", async ({ path, check }) => {
    expect((await post(path, {})).status).toBe(401); // who asks comes first: no key, no hint about the path
    const res = await post(path, {}, CLIENT);
    expect(res.status).toBe(400);
    await check(res);
  });
});

// Bodies that break off (shorter than Content-Length, broken chunking) are tested over a
// real socket in test/e2e/broken-bodies.test.ts: inside workerd, an errored request
// stream reaches the Worker as a body that merely ends early.

describe("deeply nested JSON", () => {
  const nested = (depth: number) => `{"model":"chat","messages":[],"x":${"[".repeat(depth)}${"]".repeat(depth)}}`;

  it(`is refused with 400 past ${MAX_JSON_DEPTH} levels, before anything re-encodes it (6,000 levels overflowed the stack)`, async () => {
    const res = await post("/v1/chat/completions", nested(6_000), CLIENT);
    expect(res.status).toBe(400);
    expect(await shapes.openai(res)).toMatchObject({ code: "invalid_json", message: expect.stringContaining(`${MAX_JSON_DEPTH} levels`) });
  });

  it("at the limit it is routed (and renamed for the upstream) as usual", async () => {
    // The body's own object is one level, so MAX_JSON_DEPTH - 1 arrays inside it reach the limit exactly.
    const res = await post("/v1/chat/completions", nested(MAX_JSON_DEPTH - 1), CLIENT);
    expect(res.status).toBe(200);
    expect(JSON.parse((await lastRequest(echo)).body).model).toBe("served-chat");
    expect((await post("/v1/chat/completions", nested(MAX_JSON_DEPTH), CLIENT)).status).toBe(400);
  });

  it("sent to a graph, is never a 500", async () => {
    const res = await post("/graphs/guarded", `{"instances":${"[".repeat(6_000)}${"]".repeat(6_000)}}`, CLIENT);
    expect(res.status).toBeLessThan(500);
  });
});

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
        "content-encoding": "identity",
        "x-request-id": "kept",
      },
    );
    expect(res.status).toBe(200);
    const seen = (await lastRequest(echo)).headers;
    for (const name of ["authorization", "x-api-key", "x-http-method-override", "x-original-url", "x-rewrite-url", "x-forwarded-host", "content-encoding"]) {
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
});
