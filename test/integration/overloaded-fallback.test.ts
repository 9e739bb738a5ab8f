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

describe("a Responses request an Anthropic-only pool cannot take", () => {
  it("is refused naming the field as the client wrote it, text.format, not the chat request's response_format", async () => {
    const res = await post("/v1/responses", { model: "alone", input: "hi", text: { format: { type: "json_object" } } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param: "text.format", message: expect.stringContaining('replicas: text.format: type "json_object" is not carried') } });
  });
});

describe("an Anthropic-native stream that ends in an error event", () => {
  it("reaches a chat client as one error chunk, not that and a second for the missing end", async () => {
    const events = [
      ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude", content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 1 } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hel" } }],
      ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded mid-stream" } }],
    ] as const;
    const raw = events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join("");
    const broken = await spawnServer({ reply: { raw, contentType: "text/event-stream" } }, "anthropic-error-event");
    try {
      const model = `m-${crypto.randomUUID().slice(0, 8)}`;
      await publish(`models:\n  ${model}: { pool: p }\npools:\n  p:\n    replicas:\n      - { id: claude, url: "${broken.url}", dialect: anthropic }\nrouting: { shared_state: false }\n`);
      const res = await post("/v1/chat/completions", { model, stream: true, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      const chunks = (await res.text()).split("\n\n").filter((c) => c.startsWith("data: ")).map((c) => c.slice(6));
      const errors = chunks.filter((c) => c.includes('"error"'));
      expect(errors.map((e) => JSON.parse(e))).toEqual([{ error: { message: "Overloaded mid-stream", type: "overloaded_error" } }]);
      expect(chunks.some((c) => c.includes('"Hel"'))).toBe(true);
    } finally {
      await broken.close();
    }
  });
});

describe("an Anthropic-native replica's error that is not in Anthropic's shape", () => {
  it("reaches a chat client with its status and words, not as an answer that is 'not a Message'", async () => {
    const [plain, detail] = await Promise.all([
      spawnServer({ reply: { status: 431, raw: "Request Header Fields Too Large", contentType: "text/plain" } }, "anthropic-431"),
      spawnServer({ reply: { status: 422, body: { detail: "max_tokens: field required" } } }, "anthropic-422"),
    ]);
    try {
      const [a, b] = [`m-${crypto.randomUUID().slice(0, 8)}`, `m-${crypto.randomUUID().slice(0, 8)}`];
      await publish(`models:\n  ${a}: { pool: a }\n  ${b}: { pool: b }\npools:\n  a:\n    replicas: [{ id: claude, url: "${plain.url}", dialect: anthropic }]\n  b:\n    replicas: [{ id: claude, url: "${detail.url}", dialect: anthropic }]\nrouting: { shared_state: false }\n`);
      const first = await post("/v1/chat/completions", { model: a, messages: [{ role: "user", content: "hi" }] });
      expect(first.status).toBe(431);
      expect(((await first.json()) as { error: { message: string } }).error.message).toBe("The upstream answered 431");
      const second = await post("/v1/chat/completions", { model: b, messages: [{ role: "user", content: "hi" }] });
      expect(second.status).toBe(422);
      expect(((await second.json()) as { error: { message: string } }).error.message).toBe("max_tokens: field required");
    } finally {
      await Promise.all([plain.close(), detail.close()]);
    }
  });
});

describe("an overloaded upstream's Retry-After", () => {
  it("reaches the client on the router's 503 (529 on /v1/messages): the soonest any tried replica named, an HTTP date read as seconds", async () => {
    const soon = new Date(Date.now() + 30_000).toUTCString();
    const [seven, dated, silent] = await Promise.all([
      spawnServer({ reply: { status: 429, body: { error: { message: "slow down" } } }, responseHeaders: { "retry-after": "7" } }, "retry-after-7"),
      spawnServer({ reply: { status: 503, body: {} }, responseHeaders: { "retry-after": soon } }, "retry-after-date"),
      spawnServer({ reply: { status: 429, body: {} } }, "retry-after-none"),
    ]);
    try {
      const suffix = crypto.randomUUID().slice(0, 8);
      const [both, alone, none] = [`both-${suffix}`, `alone-${suffix}`, `none-${suffix}`];
      await publish(`models:\n  ${both}: { pool: both }\n  ${alone}: { pool: alone }\n  ${none}: { pool: none }\npools:\n  both:\n    replicas: [{ id: a, url: "${seven.url}" }, { id: b, url: "${dated.url}" }]\n  alone:\n    replicas: [{ id: d, url: "${dated.url}" }]\n  none:\n    replicas: [{ id: n, url: "${silent.url}" }]\nrouting: { shared_state: false }\n`);
      const chat = (model: string) => post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }] });
      const first = await chat(both);
      expect([first.status, first.headers.get("retry-after")]).toEqual([503, "7"]);
      const dateWait = Number((await chat(alone)).headers.get("retry-after"));
      expect(dateWait).toBeGreaterThanOrEqual(25);
      expect(dateWait).toBeLessThanOrEqual(30);
      const anthropic = await post("/v1/messages", { model: both, max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
      expect([anthropic.status, anthropic.headers.get("retry-after")]).toEqual([529, "7"]);
      expect((await chat(none)).headers.get("retry-after")).toBeNull();
    } finally {
      await Promise.all([seven.close(), dated.close(), silent.close()]);
    }
  });
});
