import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256, toHex } from "../../src/lib/crypto";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { chat, openAIErrorOf, poolConfig, post, publish, routerFetch } from "../support/router";

let server: FleetServer;
beforeAll(async () => {
  server = await spawnServer();
});
afterAll(() => server.close());

describe("before any config is published", () => {
  it("answers 503 with an OpenAI error saying so", async () => {
    const res = await chat("m");
    expect(res.status).toBe(503);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "no_config", type: "service_unavailable" });
    expect((await routerFetch("/health")).status).toBe(503);
  });
});

describe("OpenAI surface", () => {
  beforeAll(async () => {
    await publish(poolConfig([{ id: "only", url: server.url }], "routing: { max_body_bytes: 2048 }\n"));
  });

  it("routes chat, completions and embeddings to the same path upstream", async () => {
    await server.reset();
    const chatRes = await chat("m");
    expect(chatRes.status).toBe(200);
    expect(chatRes.headers.get("x-switchyard-replica")).toBe("only");
    expect(chatRes.headers.get("x-switchyard-attempts")).toBe("1");
    const completion = await post("/v1/completions", { model: "m", prompt: "hi" });
    expect(((await completion.json()) as { object: string }).object).toBe("text_completion");
    const embedding = await post("/v1/embeddings", { model: "m", input: ["a", "b"] });
    expect(((await embedding.json()) as { data: unknown[] }).data).toHaveLength(2);
    expect((await server.stats()).byPath).toMatchObject({ "/v1/chat/completions": 1, "/v1/completions": 1, "/v1/embeddings": 1 });
  });

  it("lists configured models in OpenAI's list shape", async () => {
    const res = await routerFetch("/v1/models");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; data: { id: string; object: string; owned_by: string }[] };
    expect(body.object).toBe("list");
    expect(body.data).toEqual([expect.objectContaining({ id: "m", object: "model", owned_by: "switchyard" })]);
  });

  it("reports health with the serving version", async () => {
    const res = await routerFetch("/health");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("ok");
  });

  it("malformed JSON -> 400 invalid_json", async () => {
    const res = await post("/v1/chat/completions", '{"model": "m", ');
    expect(res.status).toBe(400);
    expect(await openAIErrorOf(res)).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });
  });

  it("a JSON body that is not an object -> 400", async () => {
    expect((await post("/v1/chat/completions", "[1,2]")).status).toBe(400);
    expect((await routerFetch("/v1/chat/completions", { method: "POST" })).status).toBe(400);
  });

  it("missing model -> 400 naming the parameter", async () => {
    const res = await post("/v1/chat/completions", { messages: [] });
    expect(res.status).toBe(400);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "missing_model", param: "model" });
    expect((await post("/v1/chat/completions", { model: 42 })).status).toBe(400);
  });

  it("unknown model -> 404 model_not_found", async () => {
    const res = await chat("gpt-nowhere");
    expect(res.status).toBe(404);
    expect(await openAIErrorOf(res)).toMatchObject({ code: "model_not_found", param: "model" });
  });

  it("body over the configured limit -> 413, by Content-Length and by counting a chunked body", async () => {
    await server.reset();
    const big = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(4096) }] });
    const declared = await post("/v1/chat/completions", big);
    expect(declared.status).toBe(413);
    expect(await openAIErrorOf(declared)).toMatchObject({ code: "request_too_large" });

    const bytes = new TextEncoder().encode(big);
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 512) controller.enqueue(bytes.slice(i, i + 512));
        controller.close();
      },
    });
    const streamed = await routerFetch("/v1/chat/completions", { method: "POST", body: chunked, headers: { "content-type": "application/json" } });
    expect(streamed.status).toBe(413);
    expect((await server.stats()).requests).toBe(0); // nothing oversized reached the model
  });

  it("wrong method -> 405 with Allow", async () => {
    const res = await routerFetch("/v1/chat/completions", { method: "GET" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await openAIErrorOf(res)).toMatchObject({ code: "method_not_allowed" });
    expect((await routerFetch("/v1/models", { method: "POST", body: "{}" })).headers.get("allow")).toBe("GET");
    expect((await routerFetch("/routing", { method: "DELETE" })).status).toBe(405);
  });

  it("unknown path -> 404 OpenAI error", async () => {
    const res = await routerFetch("/v2/anything");
    expect(res.status).toBe(404);
    expect((await openAIErrorOf(res)).type).toBe("not_found_error");
  });
});

describe("client keys", () => {
  const RAW = "sk-client-one";
  beforeAll(async () => {
    const digest = toHex(await sha256(RAW));
    // public_view: /routing takes a client key here (and shows it the public view).
    await publish(poolConfig([{ id: "only", url: server.url }], `routing: { public_view: true }\nauth:\n  client_keys: ["sha256:${digest}", "\${TEST_CLIENT_KEY}"]\n`));
  });

  it("refuses a request without a bearer key (401)", async () => {
    const res = await chat("m");
    expect(res.status).toBe(401);
    expect(await openAIErrorOf(res)).toMatchObject({ type: "authentication_error", code: "invalid_api_key" });
    expect((await routerFetch("/v1/models")).status).toBe(401);
    expect((await routerFetch("/routing")).status).toBe(401);
    expect((await routerFetch("/routing", { headers: { authorization: `Bearer ${RAW}` } })).status).toBe(200);
  });

  it("refuses a wrong key (401)", async () => {
    expect((await chat("m", {}, { authorization: "Bearer sk-wrong" })).status).toBe(401);
    expect((await chat("m", {}, { authorization: `Bearer ${RAW}x` })).status).toBe(401);
  });

  it("accepts a key stored as a hash and one stored as a ${VAR} secret, and never forwards it", async () => {
    await server.reset();
    expect((await chat("m", {}, { authorization: `Bearer ${RAW}` })).status).toBe(200);
    expect((await chat("m", {}, { authorization: "Bearer sk-from-secret" })).status).toBe(200);
    const { recent } = await server.stats();
    expect(recent).toHaveLength(2);
    for (const r of recent) expect(r.headers.authorization).toBeUndefined();
  });
});
