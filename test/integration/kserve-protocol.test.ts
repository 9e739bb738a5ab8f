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
