/**
 * Request bodies the router must bound and survive whatever their headers say, on every
 * route that reads one, through the app's own fetch: a body handed to the Worker
 * in-process (as a test, another Worker or a service binding can) is a stream with
 * whatever Content-Length it claims, not one the runtime's HTTP framing has already held
 * to it. (Over a real socket, test/e2e/conformance.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, isolateFetch, publish, routerFetch } from "../support/router";

const MAX_BODY_BYTES = 16_384; // the config's routing.max_body_bytes below
const MAX_CONFIG_BYTES = 1024 * 1024; // PUT /admin/config's own limit (src/platform/surfaces/publish-config.ts)
const CHUNK_BYTES = 16 * 1024;
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

let upstream: FleetServer;
let version: string;
beforeAll(async () => {
  upstream = await spawnServer({ reply: { body: { predictions: [1] } } }, "bodies");
  version = await publish(`models:
  chat: { pool: openai }
  priced:
    router: routewise
    routes:
      - { id: paid, url: "${upstream.url}", provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 } }
pools:
  openai:
    replicas: [{ id: up, url: "${upstream.url}" }]
routing: { shared_state: false, max_body_bytes: ${MAX_BODY_BYTES} }
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

/** Every route that reads a body, with its limit and how its error shape carries the message. */
const ROUTES = [
  { path: "/v1/chat/completions", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.error.message as string },
  { path: "/v1/completions", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.error.message as string },
  { path: "/v1/embeddings", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.error.message as string },
  { path: "/v1/models/chat:predict", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.error as string },
  { path: "/v2/models/chat/infer", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.error as string },
  { path: "/graphs/guarded", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.cause as string },
  { path: "/feedback", headers: {}, limit: MAX_BODY_BYTES, message: (b: any) => b.status.info as string },
  { path: "/admin/routewise/priced/calibrate", headers: ADMIN, limit: MAX_BODY_BYTES, message: (b: any) => b.error.message as string },
  { path: "/admin/config", method: "PUT", headers: ADMIN, limit: MAX_CONFIG_BYTES, message: (b: any) => b.error.message as string },
] as const;

/** A body that sends `chunks` chunks of spaces and then ends (or errors), counting how many were pulled. */
function spaces(chunks: number, then: "end" | "error") {
  const seen = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled < chunks) {
        seen.pulled++;
        controller.enqueue(new Uint8Array(CHUNK_BYTES).fill(0x20));
      } else if (then === "end") controller.close();
      else controller.error(new Error("the client's stream broke"));
    },
  });
  return { stream, seen };
}

async function send(route: (typeof ROUTES)[number], body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) {
  const res = await isolateFetch(route.path, { method: "method" in route ? route.method : "POST", headers: { ...route.headers, ...headers }, body }, {});
  return { status: res.status, message: route.message(await res.json()) };
}

describe("every route that reads a body", () => {
  it.each(ROUTES.map((r) => [r.path, r] as const))("%s: a body past the limit is refused at the limit, whatever Content-Length claims", async (_path, route) => {
    const chunks = Math.ceil(route.limit / CHUNK_BYTES) + 40; // far past the limit if read whole
    for (const headers of [{ "content-length": "10" }, {}] as Record<string, string>[]) {
      const { stream, seen } = spaces(chunks, "end");
      const answer = await send(route, stream, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(413);
      // Counted as it came: a chunk or two of read-ahead past the limit, never the rest.
      expect(seen.pulled, JSON.stringify(headers)).toBeLessThanOrEqual(Math.ceil(route.limit / CHUNK_BYTES) + 3);
    }
  });

  it.each(ROUTES.map((r) => [r.path, r] as const))("%s: a body whose stream errors is the client's 400, in the route's own shape", async (_path, route) => {
    const { stream } = spaces(1, "error");
    const answer = await send(route, stream);
    expect(answer).toEqual({ status: 400, message: "Request body could not be read: the client's stream broke" });
  });
});

describe("PUT /admin/config", () => {
  it("refused bodies leave the last good config serving", async () => {
    await send(ROUTES.find((r) => r.path === "/admin/config")!, spaces(80, "end").stream, { "content-length": "10" });
    await send(ROUTES.find((r) => r.path === "/admin/config")!, spaces(1, "error").stream);
    const routing = (await (await routerFetch("/routing", { headers: ADMIN })).json()) as { config: { version: string } };
    expect(routing.config.version).toBe(version);
    const served = await routerFetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] }) });
    expect(served.status).toBe(200);
  });
});
