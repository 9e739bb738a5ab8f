/**
 * Anthropic's overload status, 529, is retried on the next replica under the default
 * `retry_on`, as 429 and 503 are: against a real Anthropic upstream it is the most common
 * transient error, and before it reached the client as it was, the pool's other replica
 * never tried (found by an outside audit with @anthropic-ai/sdk).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { post, publish } from "../support/router";

let overloaded: FleetServer;
let spare: FleetServer;
beforeAll(async () => {
  [overloaded, spare] = await Promise.all([
    spawnServer({ reply: { status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } } }, "overloaded-529"),
    spawnServer({}, "overloaded-spare"),
  ]);
  // weight 1,000,000 to 1: the overloaded replica is tried first but once in a million requests
  await publish(`models:
  mix: { pool: mixed }
  alone: { pool: alone }
pools:
  mixed:
    replicas:
      - { id: claude, url: "${overloaded.url}", dialect: anthropic, api_key: "\${TEST_CLIENT_KEY}", weight: 1000000 }
      - { id: chat, url: "${spare.url}", weight: 1 }
  alone:
    replicas:
      - { id: claude, url: "${overloaded.url}", dialect: anthropic, api_key: "\${TEST_CLIENT_KEY}" }
routing: { shared_state: false }
`);
});
afterAll(async () => {
  await Promise.all([overloaded.close(), spare.close()]);
});

const message = (model: string) => ({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] });

describe("an upstream's 529 overloaded_error", () => {
  it("is retried on the pool's next replica under the default retry_on", async () => {
    const res = await post("/v1/messages", message("mix"));
    expect(res.status).toBe(200);
    expect(res.headers.get("x-switchyard-replica")).toBe("chat");
    expect(res.headers.get("x-switchyard-attempts")).toBe("2");
    await res.arrayBuffer();
  });

  it("with no other replica, is the router's overload: 529 overloaded_error to an Anthropic client, 503 to an OpenAI one", async () => {
    const anthropic = await post("/v1/messages", message("alone"));
    expect(anthropic.status).toBe(529);
    expect(await anthropic.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    const openai = await post("/v1/chat/completions", { model: "alone", messages: [{ role: "user", content: "hi" }] });
    expect(openai.status).toBe(503);
    expect(await openai.json()).toMatchObject({ error: { code: "upstream_unavailable" } });
  });
});
