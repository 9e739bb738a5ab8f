import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { poolConfig, post, publish, routerFetch } from "../support/router";

let replica: FleetServer;
beforeAll(async () => {
  replica = await spawnServer({ reply: { body: { predictions: [42] } } }, "kserve");
  await publish(poolConfig([{ id: "r", url: replica.url }], "routing: { max_body_bytes: 1024 }\n", "iris"));
});
afterAll(() => replica.close());

describe("KServe v1/v2 inference protocols on a pool", () => {
  it("routes by the model in the path and keeps the path upstream", async () => {
    const v1 = await post("/v1/models/iris:predict", { instances: [[1, 2, 3, 4]] });
    expect([v1.status, await v1.json()]).toEqual([200, { predictions: [42] }]);
    expect(v1.headers.get("x-switchyard-replica")).toBe("r");
    const v2 = await post("/v2/models/iris/infer", { inputs: [] });
    expect(v2.status).toBe(200);
    const paths = (await replica.stats()).recent.map((r) => r.path);
    expect(paths.slice(-2)).toEqual(["/v1/models/iris:predict", "/v2/models/iris/infer"]);
    expect(JSON.parse((await replica.stats()).recent.at(-2)!.body)).toEqual({ instances: [[1, 2, 3, 4]] }); // body untouched
  });

  it("answers an unknown model, an oversized body, an unknown path and a wrong method with {\"error\": ...}", async () => {
    const unknown = await post("/v2/models/nope/infer", {});
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toContain("'nope' does not exist");
    const big = await post("/v1/models/iris:predict", { instances: ["x".repeat(2048)] });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: string }).error).toContain("exceeds the configured limit");
    const odd = await post("/v1/models/iris:explain", {});
    expect(odd.status).toBe(404);
    expect(typeof ((await odd.json()) as { error: string }).error).toBe("string");
    const wrongMethod = await routerFetch("/v2/models/iris/infer", { method: "GET" });
    expect([wrongMethod.status, wrongMethod.headers.get("allow")]).toEqual([405, "POST"]);
    expect(Object.keys((await wrongMethod.json()) as object)).toEqual(["error"]);
  });
});

describe("what a model-serving client asks before it infers", () => {
  it("KServe's liveness, readiness, server metadata and model readiness, without calling the replica", async () => {
    const before = (await replica.stats()).requests;
    const get = (path: string, headers: Record<string, string> = {}) => routerFetch(path, { headers });
    expect([(await get("/v2/health/live")).status, await (await get("/v2/health/live")).json()]).toEqual([200, { live: true }]);
    expect(await (await get("/v2/health/ready")).json()).toEqual({ ready: true });
    expect(await (await get("/v2")).json()).toMatchObject({ name: "switchyard", extensions: [] });
    const ready = await get("/v2/models/iris/ready");
    expect([ready.status, await ready.json()]).toEqual([200, { name: "iris", ready: true }]);
    const unknown = await get("/v2/models/nope/ready");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toContain("'nope' does not exist");
    expect((await replica.stats()).requests).toBe(before);
  });

  it("GET /v1/models/<model>: OpenAI's Model object for models.retrieve and KServe v1's {name, ready} in one body", async () => {
    const res = await routerFetch("/v1/models/iris");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: "iris", object: "model", created: expect.any(Number), owned_by: "switchyard", name: "iris", ready: true });
    const unknown = await routerFetch("/v1/models/nope");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: "model_not_found", param: "model" } });
    expect((await routerFetch("/v1/models/iris:predict")).status).toBe(405); // the POST's path, asked with GET
  });
});

describe("a model version in the path (Triton's clients name one)", () => {
  it("reaches the replica as the same versioned path for the model it serves; a version that is no name is refused", async () => {
    const res = await post("/v2/models/iris/versions/3/infer", { inputs: [] });
    expect(res.status).toBe(200);
    expect((await replica.stats()).recent.at(-1)!.path).toBe("/v2/models/iris/versions/3/infer");
    for (const bad of [".hidden", "-1", "a%2Fb"]) { // (%2e%2e never gets here: the URL parser reads it as "..", leaving /v2/models/iris/infer)
      const refused = await post(`/v2/models/iris/versions/${bad}/infer`, { inputs: [] });
      expect(refused.status, bad).toBe(400);
      expect(((await refused.json()) as { error: string }).error, bad).toContain("model version");
    }
  });
});
