/**
 * Bad input on the surfaces added after the OpenAI ones, each answered in its own
 * convention: /graphs (KServe's error object), /feedback (Seldon's status), /metrics
 * (admin only). Client keys are on in this file's config.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, post, publish, routerFetch } from "../support/router";

const CLIENT = { authorization: "Bearer sk-from-secret" }; // TEST_CLIENT_KEY in vitest.config.ts
let upstream: FleetServer;
beforeAll(async () => {
  upstream = await spawnServer({ reply: { body: { predictions: [1] } } }, "bad-input");
  await publish(`auth:
  client_keys: ["\${TEST_CLIENT_KEY}"]
routing: { max_body_bytes: 256 }
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
      - serviceUrl: ${upstream.url}
`);
});
afterAll(() => upstream.close());

const kserveErrorOf = async (res: Response) => (await res.json()) as { error: string; cause: string };

describe("/graphs", () => {
  it("needs a client key when client keys are configured (401, KServe shape), and then answers", async () => {
    const denied = await post("/graphs/guarded", {});
    expect(denied.status).toBe(401);
    expect(await kserveErrorOf(denied)).toMatchObject({ error: "Failed to process request", cause: "Missing API key: send `Authorization: Bearer <key>`" });
    expect((await post("/graphs/guarded", {}, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post("/graphs/guarded", {}, CLIENT)).status).toBe(200);
  });

  it("refuses a body over the limit with 413, before calling any step", async () => {
    const before = (await upstream.stats()).requests;
    const res = await post("/graphs/guarded", { x: "y".repeat(512) }, CLIENT);
    expect(res.status).toBe(413);
    expect((await kserveErrorOf(res)).cause).toContain("exceeds the configured limit of 256 bytes");
    expect((await upstream.stats()).requests).toBe(before);
  });

  it("never forwards the router's own client key to a step", async () => {
    await post("/graphs/guarded", {}, CLIENT);
    expect((await upstream.stats()).recent.at(-1)!.headers.authorization).toBeUndefined();
  });
});

describe("/feedback", () => {
  it("needs a client key (401 in Seldon's status shape)", async () => {
    const res = await post("/feedback", { response: { meta: { routing: {} } }, reward: 1 });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { status: { status: string; code: number } }).status).toMatchObject({ status: "FAILURE", code: 401 });
  });

  it("refuses an oversized body (413) and a non-integer route (400)", async () => {
    expect((await post("/feedback", { reward: 1, pad: "z".repeat(512) }, CLIENT)).status).toBe(413);
    expect((await post("/feedback", { response: { meta: { routing: { root: "one" } } }, reward: 1 }, CLIENT)).status).toBe(400);
  });

  it("credits nothing, successfully, when the routing names no learning router", async () => {
    const res = await post("/feedback", { response: { meta: { routing: { root: 0 } } }, reward: 1 }, CLIENT);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { meta: { credited: unknown[] } }).meta.credited).toEqual([]);
  });
});

describe("/metrics", () => {
  it("is admin-only: 401 without or with a wrong token, and never accepts a client key", async () => {
    expect((await routerFetch("/metrics")).status).toBe(401);
    expect((await routerFetch("/metrics", { headers: CLIENT })).status).toBe(401);
    expect((await routerFetch("/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status).toBe(200);
    expect((await routerFetch("/metrics", { method: "POST" })).status).toBe(405);
  });
});
