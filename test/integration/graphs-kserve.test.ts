/**
 * KServe's InferenceGraph router tests (cmd/router/main_test.go) and e2e scenarios
 * (test/e2e/graph/test_inference_graph.py) re-created as black-box tests: real HTTP model
 * servers on 127.0.0.1, the Worker in workerd, KServe manifests published as they are.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { FakeBehaviour, FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { post, publish, routerFetch } from "../support/router";
import { CHI2_CRITICAL_1E4, chiSquare } from "../support/statistics";

const spawned: FleetServer[] = [];
async function model(body: unknown, status = 200, extra: FakeBehaviour = {}): Promise<FleetServer> {
  const s = await spawnServer({ reply: { status, body }, ...extra }, "model");
  spawned.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(spawned.splice(0).map((s) => s.close()));
});

const SUCCESS = { predictions: [{ message: "SUCCESS" }] }; // KServe e2e success_200_isvc
const NOT_FOUND = { detail: "Intentional 404 code" }; // KServe e2e error_404_isvc
const NO_MATCH = { error: "Failed to process request", cause: "None of the routes matched with the switch condition" };

/** One InferenceGraph manifest, exactly as a KServe user writes it. */
function manifest(name: string, nodes: string): string {
  return `apiVersion: serving.kserve.io/v1alpha1\nkind: InferenceGraph\nmetadata:\n  name: ${name}\nspec:\n  nodes:\n${nodes}`;
}
const uniqueName = (base: string) => `${base}-${crypto.randomUUID().slice(0, 6)}`;

async function callGraph(name: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await post(`/graphs/${name}`, body, headers);
  const text = await res.text();
  return { status: res.status, text, json: safeJson(text), headers: res.headers };
}
function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
const lastBody = async (s: FleetServer) => JSON.parse((await s.stats()).recent.at(-1)!.body) as unknown;

describe("KServe router unit tests", () => {
  it("TestSimpleModelChainer: mapPredictionsToInstances, then data: $response", async () => {
    const [m1, m2] = [await model({ predictions: "1" }), await model({ predictions: "2" })];
    const name = uniqueName("chainer");
    await publish(
      manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - name: model1\n        serviceUrl: ${m1.url}\n        mapPredictionsToInstances: true\n      - name: model2\n        serviceUrl: ${m2.url}\n        data: $response\n`),
    );
    const res = await callGraph(name, { predictions: ["test", "test2"] }, { authorization: "Bearer Token" });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ predictions: "2" });
    expect(await lastBody(m1)).toEqual({ instances: ["test", "test2"] });
    expect(await lastBody(m2)).toEqual({ predictions: "1" });
  });

  it("TestSimpleModelEnsemble: {stepName: answer}, keys sorted as Go writes them", async () => {
    const [m2, m1] = [await model({ predictions: "2" }), await model({ predictions: "1" })];
    const name = uniqueName("ensemble");
    await publish(manifest(name, `    root:\n      routerType: Ensemble\n      steps:\n      - name: model2\n        serviceUrl: ${m2.url}\n      - name: model1\n        serviceUrl: ${m1.url}\n`));
    const res = await callGraph(name, { instances: ["test", "test2"] });
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"model1":{"predictions":"1"},"model2":{"predictions":"2"}}');
  });

  it("TestInferenceGraphWithCondition: Sequence → Switch on the input → Ensemble on the original input", async () => {
    const cat = await model({ predictions: [{ label: "cat", score: [0.1, 0.9] }] });
    const dog = await model({ predictions: [{ label: "dog", score: [0.8, 0.2] }] });
    const beagle = await model({ predictions: [{ label: "beagle", score: [0.1, 0.9] }] });
    const poodle = await model({ predictions: [{ label: "poodle", score: [0.8, 0.2] }] });
    const name = uniqueName("animals");
    await publish(
      manifest(
        name,
        `    root:
      routerType: Sequence
      steps:
      - name: step1
        nodeName: animal-categorize
      - name: step2
        nodeName: breed-categorize
        condition: predictions.#(label=="dog")
    animal-categorize:
      routerType: Switch
      steps:
      - name: model1
        serviceUrl: ${cat.url}
        condition: instances.#(modelId=="1")
      - name: model2
        serviceUrl: ${dog.url}
        condition: instances.#(modelId=="2")
    breed-categorize:
      routerType: Ensemble
      steps:
      - name: model3
        serviceUrl: ${beagle.url}
      - name: model4
        serviceUrl: ${poodle.url}
`,
      ),
    );
    const res = await callGraph(name, { instances: [{ modelId: "2" }] });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ model3: { predictions: [{ label: "beagle", score: [0.1, 0.9] }] }, model4: { predictions: [{ label: "poodle", score: [0.8, 0.2] }] } });
    expect(await lastBody(beagle)).toEqual({ instances: [{ modelId: "2" }] }); // no data: $response, so the node input
    expect((await cat.stats()).requests).toBe(0);
    expect(res.headers.get("x-switchyard-route")).toBe("root/step1>animal-categorize/model2,root/step2>breed-categorize/model3,root/step2>breed-categorize/model4");
  });

  it("TestInferenceGraphSequenceWithUnmetCondition: 200 with the previous answer, next step never called", async () => {
    const m1 = await model({ predictions: [{ label: "cat", score: [0.8, 0.2] }] });
    const never = await model({ never: true });
    const name = uniqueName("unmet");
    await publish(
      manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - name: step1\n        serviceUrl: ${m1.url}\n      - name: step2\n        serviceUrl: ${never.url}\n        condition: predictions.#(label=="dog")\n`),
    );
    const res = await callGraph(name, { instances: [{ modelId: "1" }] });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ predictions: [{ label: "cat", score: [0.8, 0.2] }] });
    expect((await never.stats()).requests).toBe(0);
  });

  describe("header propagation (PROPAGATE_HEADERS semantics)", () => {
    const headers = { authorization: "Bearer Token", "test-header-key": "Test-Header-Value", "test-header-1": "a", "test-header-2": "b" };
    async function propagated(patterns: string[]) {
      const echo = await model({ predictions: "1" }, 200, { echoHeaders: ["Authorization", "Test-Header-Key", "Test-Header-1", "Test-Header-2"] });
      const name = uniqueName("headers");
      await publish(`graph_settings:\n  propagate_headers: ${JSON.stringify(patterns)}\n---\n${manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${echo.url}\n`)}`);
      return (await callGraph(name, {}, headers)).json;
    }
    it("forwards nothing by default", async () => {
      expect(await propagated([])).toEqual({ predictions: "1" });
    });
    it("forwards one named header", async () => {
      expect(await propagated(["Test-Header-Key"])).toEqual({ predictions: "1", "Test-Header-Key": "Test-Header-Value" });
    });
    it("forwards several, by pattern on canonical names", async () => {
      expect(await propagated(["Test-Header-.*", "Authorization"])).toEqual({
        predictions: "1",
        Authorization: "Bearer Token",
        "Test-Header-Key": "Test-Header-Value",
        "Test-Header-1": "a",
        "Test-Header-2": "b",
      });
    });
    // Switchyard differs from KServe here: KServe's patterns are unanchored, so `Auth*`
    // forwards Authorization and `Authorization` would forward Proxy-Authorization too.
    it("matches whole names only: a pattern is anchored at both ends", async () => {
      expect(await propagated(["Test-Header-*", "Auth*", "Header-Key", "Test-Header"])).toEqual({ predictions: "1" });
    });
    // Authorization is the one header the router may own: when client keys are
    // configured it carries a key for the router itself, and no pattern sends it on.
    describe("Authorization and the router's own client keys", () => {
      const CLIENT_KEY = "sk-from-secret"; // TEST_CLIENT_KEY in vitest.config.ts
      const ECHOED = ["Authorization", "Test-Header-Key"];
      /** A graph over one echoing step, with Authorization among the propagated headers, served on every surface that runs graphs. */
      async function echoGraph(auth: string) {
        const echo = await model({ predictions: "1" }, 200, { echoHeaders: ECHOED });
        const name = uniqueName("owned");
        const gm = `gm-${name}`;
        await publish(
          `models:\n  ${gm}: { graph: ${name} }\n${auth}graph_settings:\n  propagate_headers: ["Authorization", "Test-Header-Key"]\n---\n` +
            manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${echo.url}\n`),
        );
        const surfaces = {
          graphs: (headers: Record<string, string>) => post(`/graphs/${name}`, {}, headers),
          openai: (headers: Record<string, string>) => post("/v1/chat/completions", { model: gm, messages: [] }, headers),
          kserveV1: (headers: Record<string, string>) => post(`/v1/models/${gm}:predict`, { instances: [] }, headers),
        };
        return { echo, surfaces };
      }

      it("never sends a configured client key to a step, even when propagate_headers names Authorization", async () => {
        const { echo, surfaces } = await echoGraph(`auth:\n  client_keys: ["\${TEST_CLIENT_KEY}"]\n`);
        for (const [surface, send] of Object.entries(surfaces)) {
          const res = await send({ authorization: `Bearer ${CLIENT_KEY}`, "test-header-key": "kept" });
          expect(res.status, surface).toBe(200);
          // The other propagated header arrives: the patterns are live, Authorization alone is held back.
          expect(await res.json(), surface).toEqual({ predictions: "1", "Test-Header-Key": "kept" });
          const seen = (await echo.stats()).recent.at(-1)!;
          expect(seen.headers.authorization, surface).toBeUndefined();
          expect(JSON.stringify(seen.headers), surface).not.toContain(CLIENT_KEY);
        }
        expect((await echo.stats()).recent).toHaveLength(3);
      });

      it("propagates a caller's own bearer when no client keys are configured and a pattern asks for it", async () => {
        const { echo, surfaces } = await echoGraph("");
        for (const [surface, send] of Object.entries(surfaces)) {
          const res = await send({ authorization: "Bearer caller-token-for-the-model", "test-header-key": "kept" });
          expect(res.status, surface).toBe(200);
          expect(await res.json(), surface).toEqual({ predictions: "1", Authorization: "Bearer caller-token-for-the-model", "Test-Header-Key": "kept" });
          expect((await echo.stats()).recent.at(-1)!.headers.authorization, surface).toBe("Bearer caller-token-for-the-model");
        }
      });
    });

    it("refuses an invalid pattern at load, naming it (KServe silently drops it)", async () => {
      const res = await routerFetch("/admin/config", {
        method: "PUT",
        headers: { authorization: "Bearer test-admin-token" },
        body: `graph_settings:\n  propagate_headers: ["Test-Header-[0-9", "Auth*"]\n---\n${manifest("bad-headers", "    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: http://127.0.0.1:9\n")}`,
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { issues: { path: string }[] };
      expect(body.issues.map((i) => i.path)).toEqual(["graph_settings.propagate_headers[0]"]);
    });
  });

  it("TestMalformedURL: refused at load instead of a 500 per request", async () => {
    const res = await routerFetch("/admin/config", {
      method: "PUT",
      headers: { authorization: "Bearer test-admin-token" },
      body: manifest("malformed", "    root:\n      routerType: Switch\n      steps:\n      - serviceUrl: http://single-1.default.{$your-domain}/switch\n        condition: '@this'\n"),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { issues: { path: string; message: string }[] }).issues).toEqual([
      { path: "graphs.malformed.nodes.root.steps[0].serviceUrl", message: "must be an absolute http(s) URL" },
    ]);
  });

  it("a transport error is a 500 with KServe's error body", async () => {
    const gone = await model({});
    const url = gone.url;
    await gone.close();
    spawned.splice(spawned.indexOf(gone), 1);
    const name = uniqueName("transport");
    await publish(manifest(name, `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${url}\n`));
    const res = await callGraph(name, {});
    expect(res.status).toBe(500);
    expect(res.json).toMatchObject({ error: "Failed to process request", cause: expect.stringContaining(`Post "${url}"`) });
  });

  // Statistical, over HTTP: 500 requests, false failure 1e-4 (chi-square, 1 df). This
  // checks the wiring, not the precision: it catches a split 15 points off (35/65) or a
  // swapped one (80/20) with a miss rate < 1e-4, but a Splitter 5 points off (25/75 or
  // 15/85) passes 84-88% of the time (test/support/statistics.ts missRate). The draw's
  // boundaries and a 20,000-draw share are tested on the executor itself, where a
  // Splitter 5 points off fails with a miss rate < 1e-50 (test/unit/splitter.test.ts).
  it("TestPickupRoute*: Splitter sends each step its weight's share (crypto draw), never nothing", async () => {
    const [a, b] = [await model({ from: "a" }), await model({ from: "b" })];
    const name = uniqueName("splitter");
    await publish(manifest(name, `    root:\n      routerType: Splitter\n      steps:\n      - serviceUrl: ${a.url}\n        weight: 20\n      - serviceUrl: ${b.url}\n        weight: 80\n`));
    const n = 500;
    const results = [];
    for (let i = 0; i < n; i += 50) results.push(...(await Promise.all(Array.from({ length: 50 }, () => callGraph(name, {})))));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const toA = results.filter((r) => (r.json as { from: string }).from === "a").length;
    expect(chiSquare([toA, n - toA], [0.2, 0.8], n), `a=${toA}`).toBeLessThan(CHI2_CRITICAL_1E4[1]);
  });
});

describe("KServe e2e scenarios", () => {
  async function scenario(nodes: (s: string, e: string) => string) {
    const [success, error] = [await model(SUCCESS), await model(NOT_FOUND, 404)];
    const name = uniqueName("scenario");
    await publish(manifest(name, nodes(success.url, error.url)));
    return name;
  }
  const picker = (decision: string) => ({ decision_picker: decision, key1: { name: "abc" } });

  it("scenario 1: soft success then soft error ($request): the last step's 404", async () => {
    const name = await scenario((s, e) => `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${s}\n      - serviceUrl: ${e}\n        data: $request\n`);
    const res = await callGraph(name, picker("SUCCESS"));
    expect([res.status, res.json]).toEqual([404, NOT_FOUND]);
  });

  it("scenario 2: soft error then success ($request): 200", async () => {
    const name = await scenario((s, e) => `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${e}\n      - serviceUrl: ${s}\n        data: $request\n`);
    const res = await callGraph(name, picker("SUCCESS"));
    expect([res.status, res.json]).toEqual([200, SUCCESS]);
  });

  it("scenario 3: Hard error stops the sequence with its status and body", async () => {
    const name = await scenario((s, e) => `    root:\n      routerType: Sequence\n      steps:\n      - serviceUrl: ${e}\n        dependency: Hard\n      - serviceUrl: ${s}\n        dependency: Soft\n`);
    const res = await callGraph(name, picker("SUCCESS"));
    expect([res.status, res.json]).toEqual([404, NOT_FOUND]);
  });

  it("scenario 4: Switch on [@this].#(...) picks the first match; no match is KServe's 404", async () => {
    const name = await scenario(
      (s, e) =>
        `    root:\n      routerType: Switch\n      steps:\n      - serviceUrl: ${e}\n        condition: "[@this].#(decision_picker==ERROR)"\n      - serviceUrl: ${s}\n        condition: "[@this].#(decision_picker==SUCCESS)"\n`,
    );
    expect(await callGraph(name, picker("ERROR")).then((r) => [r.status, r.json])).toEqual([404, NOT_FOUND]);
    expect(await callGraph(name, picker("SUCCESS")).then((r) => [r.status, r.json])).toEqual([200, SUCCESS]);
    const noMatch = await callGraph(name, picker("NO_MATCH"));
    expect([noMatch.status, noMatch.json]).toEqual([404, NO_MATCH]);
    expect(noMatch.headers.get("content-type")).toBe("application/json");
    const notJson = await post(`/graphs/${name}`, "not json");
    expect([notJson.status, await notJson.json()]).toEqual([404, NO_MATCH]);
  });

  const nestedSwitch = (dependency: string) => (s: string, e: string) =>
    `    root:
      routerType: Sequence
      steps:
      - name: rootStep1
        nodeName: node1
        dependency: ${dependency}
      - name: rootStep2
        serviceUrl: ${s}
    node1:
      routerType: Switch
      steps:
      - name: node1Step1
        serviceUrl: ${e}
        condition: "[@this].#(decision_picker==ERROR)"
        dependency: Hard
`;
  it("scenario 5: a soft nested Switch failure is ignored; step 2 gets the original input", async () => {
    const name = await scenario(nestedSwitch("Soft"));
    const res = await callGraph(name, picker("ERROR"));
    expect([res.status, res.json]).toEqual([200, SUCCESS]);
  });

  it("scenario 6: the same with a Hard step returns the nested 404", async () => {
    const name = await scenario(nestedSwitch("Hard"));
    const res = await callGraph(name, picker("ERROR"));
    expect([res.status, res.json]).toEqual([404, NOT_FOUND]);
  });

  it("a nested Switch without a match is a 500 at the parent", async () => {
    const name = await scenario(nestedSwitch("Soft"));
    const res = await callGraph(name, picker("SUCCESS"));
    expect([res.status, res.json]).toEqual([500, { ...NO_MATCH }]);
  });

  it("scenario 7: Ensemble merges soft failures in", async () => {
    const name = await scenario((s, e) => `    root:\n      routerType: Ensemble\n      steps:\n      - name: rootStep1\n        serviceUrl: ${s}\n      - name: rootStep2\n        serviceUrl: ${e}\n`);
    const res = await callGraph(name, picker("SUCCESS"));
    expect([res.status, res.json]).toEqual([200, { rootStep1: SUCCESS, rootStep2: NOT_FOUND }]);
  });

  it("scenario 8: Ensemble's first Hard failure wins", async () => {
    const name = await scenario(
      (s, e) =>
        `    root:\n      routerType: Ensemble\n      steps:\n      - name: rootStep1\n        serviceUrl: ${e}\n        dependency: Hard\n      - name: rootStep2\n        serviceUrl: ${s}\n      - name: rootStep3\n        serviceUrl: ${s}\n`,
    );
    const res = await callGraph(name, picker("SUCCESS"));
    expect([res.status, res.json]).toEqual([404, NOT_FOUND]);
  });

  const nestedSplitter = (dependency: string) => (s: string, e: string) =>
    `    root:
      routerType: Sequence
      steps:
      - name: rootStep1
        nodeName: node1
        dependency: ${dependency}
      - name: rootStep2
        serviceUrl: ${s}
    node1:
      routerType: Splitter
      steps:
      - name: node1Step1
        serviceUrl: ${e}
        weight: 100
`;
  it("scenario 9: soft nested Splitter failure, then success", async () => {
    const name = await scenario(nestedSplitter("Soft"));
    expect(await callGraph(name, { instances: [[6.8, 2.8, 4.8, 1.4]] }).then((r) => [r.status, r.json])).toEqual([200, SUCCESS]);
  });

  it("scenario 10: the same Hard returns the 404", async () => {
    const name = await scenario(nestedSplitter("Hard"));
    expect(await callGraph(name, { instances: [[6.8, 2.8, 4.8, 1.4]] }).then((r) => [r.status, r.json])).toEqual([404, NOT_FOUND]);
  });

  it("an Ensemble child that is not a JSON object is a 500", async () => {
    const [s, text] = [await model(SUCCESS), await spawnServer({ reply: { raw: "plain words" } }, "text")];
    spawned.push(text);
    const name = uniqueName("nonobject");
    await publish(manifest(name, `    root:\n      routerType: Ensemble\n      steps:\n      - serviceUrl: ${s.url}\n      - serviceUrl: ${text.url}\n`));
    const res = await callGraph(name, {});
    expect(res.status).toBe(500);
    expect((res.json as { error: string }).error).toBe("Failed to process request");
  });

  it("an Ensemble child holding a number past float64 is a 500, as Go fails to decode it, not a merged null", async () => {
    const [s, huge] = [await model(SUCCESS), await spawnServer({ reply: { raw: '{"predictions":[1e400]}' } }, "huge")];
    spawned.push(huge);
    const name = uniqueName("huge");
    await publish(manifest(name, `    root:\n      routerType: Ensemble\n      steps:\n      - serviceUrl: ${s.url}\n      - serviceUrl: ${huge.url}\n`));
    const res = await callGraph(name, {});
    expect(res.status).toBe(500);
    expect((res.json as { error: string }).error).toBe("Failed to process request");
  });
});
