/**
 * An upstream that echoes the credential it was sent (OpenAI's 401 names the key) must not
 * hand the operator's key to a client: error answers reach clients with the config's
 * secrets shown as `${VAR}` (docs/security.md), whole or translated into another dialect.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetServer } from "../support/fleet";
import { spawnServer } from "../support/fleet";
import { post, publish } from "../support/router";

const SECRET = "sk-from-secret"; // TEST_CLIENT_KEY in vitest.config.ts, here the replica's api_key
const INCORRECT = { error: { message: `Incorrect API key provided: ${SECRET}. You can find your API key at https://platform.example/keys.`, type: "invalid_request_error", code: "invalid_api_key" } };
let echo: FleetServer;
let refusing: FleetServer;
let chunked: FleetServer;
let fine: FleetServer;
beforeAll(async () => {
  [echo, refusing, chunked, fine] = await Promise.all([
    spawnServer({ reply: { status: 401, body: { error: { message: "bad key", type: "invalid_request_error" } } }, echoHeaders: ["authorization"] }, "scrub-echo"),
    spawnServer({ reply: { status: 401, body: INCORRECT } }, "scrub-refusing"),
    spawnServer({ reply: { status: 401, body: INCORRECT, chunked: true }, echoHeaders: ["authorization"] }, "scrub-chunked"),
    spawnServer({ reply: { status: 200, body: { id: "c", object: "chat.completion", model: "m", choices: [{ index: 0, message: { role: "assistant", content: `echoing ${SECRET}` }, finish_reason: "stop" }] } } }, "scrub-fine"),
  ]);
  await publish(`models:
  echo: { pool: echo }
  refusing: { pool: refusing }
  chunked: { pool: chunked }
  fine: { pool: fine }
pools:
  echo: { replicas: [{ id: e, url: "${echo.url}", api_key: "\${TEST_CLIENT_KEY}" }] }
  refusing: { replicas: [{ id: r, url: "${refusing.url}", api_key: "\${TEST_CLIENT_KEY}" }] }
  chunked: { replicas: [{ id: c, url: "${chunked.url}", api_key: "\${TEST_CLIENT_KEY}" }] }
  fine: { replicas: [{ id: f, url: "${fine.url}", api_key: "\${TEST_CLIENT_KEY}" }] }
routing: { shared_state: false }
`);
});
afterAll(async () => {
  await Promise.all([echo.close(), refusing.close(), chunked.close(), fine.close()]);
});

const chatBody = (model: string) => ({ model, messages: [{ role: "user", content: "hi" }] });

describe("an upstream's error answer that names the operator's key", () => {
  it("reaches the client with the key shown as its ${VAR}: the echoed Authorization header", async () => {
    const res = await post("/v1/chat/completions", chatBody("echo"));
    expect(res.status).toBe(401);
    const text = await res.text();
    expect(text).not.toContain(SECRET);
    expect(JSON.parse(text)).toMatchObject({ authorization: "Bearer ${TEST_CLIENT_KEY}", error: { message: "bad key" } });
  });

  it("sent chunked, without a Content-Length, as many servers send errors", async () => {
    for (const path of ["/v1/chat/completions", "/v1/messages"]) {
      const res = await post(path, { ...chatBody("chunked"), max_tokens: 16 });
      expect(res.status, path).toBe(401);
      const text = await res.text();
      expect(text, path).not.toContain(SECRET);
      expect(text, path).toContain("Incorrect API key provided: ${TEST_CLIENT_KEY}.");
    }
    const whole = await post("/v1/chat/completions", chatBody("chunked"));
    expect(await whole.json()).toMatchObject({ authorization: "Bearer ${TEST_CLIENT_KEY}" });
  });

  it("in OpenAI's own words, on the chat route and translated for an Anthropic client", async () => {
    const chat = await post("/v1/chat/completions", chatBody("refusing"));
    expect(chat.status).toBe(401);
    const chatText = await chat.text();
    expect(chatText).not.toContain(SECRET);
    expect(chatText).toContain("Incorrect API key provided: ${TEST_CLIENT_KEY}.");
    const messages = await post("/v1/messages", { model: "refusing", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    expect(messages.status).toBe(401);
    const messagesText = await messages.text();
    expect(messagesText).not.toContain(SECRET);
    expect(JSON.parse(messagesText)).toMatchObject({ type: "error", error: { message: expect.stringContaining("${TEST_CLIENT_KEY}") } });
  });

  it("leaves a successful answer as the model wrote it", async () => {
    const res = await post("/v1/chat/completions", chatBody("fine"));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(`echoing ${SECRET}`);
  });
});
