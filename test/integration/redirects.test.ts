/**
 * The router follows no redirect. A Location names a URL the config does not: following
 * it would send the client's body (and an Anthropic-native replica's x-api-key, which the
 * runtime keeps across origins) there. A redirect is a failed try, as a 5xx is.
 */
import { describe, expect, it } from "vitest";
import { serversClosedAfterEach } from "../support/fleet";
import type { OpenAIErrorBody } from "../support/router";
import { chat, post, publish } from "../support/router";

const servers = serversClosedAfterEach();
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

describe("an upstream that redirects", () => {
  it("is a failed try: the next replica answers, or the client gets a 502 without the Location; the target never sees a request", async () => {
    const [stray] = await servers([{}], "redirect-target-");
    const redirecting = { reply: { status: 307, body: {} }, responseHeaders: { location: `${stray!.url}/v1/chat/completions` } };
    const [redirector, good] = await servers([redirecting, {}], "redirector-");
    const [alone, pool] = [unique("alone"), unique("pool")];
    await publish(`models:
  ${alone}: { pool: ${alone} }
  ${pool}: { pool: ${pool} }
pools:
  ${alone}:
    replicas: [{ id: r, url: "${redirector!.url}" }]
  ${pool}:
    # weight 1,000,000 to 1: the redirecting replica is tried first but once in a million requests
    replicas: [{ id: r, url: "${redirector!.url}", weight: 1000000 }, { id: good, url: "${good!.url}", weight: 1 }]
routing: { shared_state: false, max_attempts: 2 }
`);
    const res = await chat(alone);
    expect(res.status).toBe(502);
    expect(res.headers.get("location")).toBeNull();
    expect(((await res.json()) as OpenAIErrorBody).error).toMatchObject({ code: "upstream_error", message: expect.stringContaining('replica "r" answered 307') });

    for (let i = 0; i < 4; i++) {
      const served = await chat(pool);
      expect(served.status).toBe(200);
      expect(served.headers.get("x-switchyard-replica")).toBe("good");
    }
    expect((await stray!.stats()).requests).toBe(0);
    expect((await redirector!.stats()).requests).toBe(5); // the lone model's try and each of the pool's four first tries
  });

  it("in a graph step is the step's failure, not a call to the Location", async () => {
    const [stray] = await servers([{ reply: { body: { predictions: ["stray"] } } }], "graph-redirect-target-");
    const [redirector] = await servers([{ reply: { status: 302, body: {} }, responseHeaders: { location: `${stray!.url}/v1/models/x:predict` } }], "graph-redirector-");
    const name = unique("redirecting");
    await publish(`apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: ${name}
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
      - serviceUrl: ${redirector!.url}
`);
    const res = await post(`/graphs/${name}`, { instances: [[1]] });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await res.text()).not.toContain("stray");
    expect((await stray!.stats()).requests).toBe(0);
  });
});
