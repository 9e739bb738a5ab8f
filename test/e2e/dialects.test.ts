/**
 * The Anthropic Messages and OpenAI Responses surfaces as their users meet them: the
 * official `@anthropic-ai/sdk` and `openai` clients, unchanged, against `switchyard
 * serve` (real workerd, real socket), over fake chat-completions servers on 127.0.0.1
 * whose answers each test scripts (tools/fakes: text and tool-call arguments split into
 * 3-character pieces across chunks, usage in a chunk of its own). Every target kind is
 * called: a pool, a RouteWise provider set, a graph whose step is a model.
 */
import Anthropic from "@anthropic-ai/sdk";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { FakeServer, ScriptedAnswer } from "../../tools/fakes/fake-openai";
import { startFakeOpenAI } from "../../tools/fakes/fake-openai";
import { freePort, serve, type Served } from "../support/serve-cli";

const CLIENT_KEY = "sk-dialects-client";
const NATIVE_KEY = "sk-ant-operator"; // the Anthropic-native replica's api_key
const ABORT_WAIT_MS = 5_000;

let tmp: string;
let main: FakeServer; // the pool's replica, RouteWise's route and the graph's step
let dead: FakeServer; // fails every request before its headers
let spare: FakeServer; // the fallback pool's second replica
let native: FakeServer; // an Anthropic-native model server (dialect: anthropic)
let router: Served;
let anthropic: Anthropic;
let openai: OpenAI;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "switchyard-dialects-"));
  main = await startFakeOpenAI({ id: "main" });
  dead = await startFakeOpenAI({ id: "dead", behaviour: { status: 503 } });
  spare = await startFakeOpenAI({ id: "spare" });
  native = await startFakeOpenAI({ id: "native" });
  const config = `models:
  chat: { pool: gpu }
  chat-fallback: { pool: fallback }
  chat-down: { pool: down }
  chat-rw:
    router: routewise
    routes:
      - { id: paid, url: "${main.url}/v1", provider_type: on_demand, pricing: { input: 0.000001, output: 0.000002 } }
  chat-graph: { graph: chat-graph }
  chat-native: { pool: native, upstream_model: claude-upstream }
  chat-rw-native:
    router: routewise
    routes:
      - { id: claude-paid, url: "${native.url}/v1", dialect: anthropic, api_key: "\${NATIVE_KEY}", upstream_model: claude-provider, provider_type: on_demand, pricing: { input: 0.000003, output: 0.000015 } }
pools:
  native:
    replicas:
      - { id: claude, url: "${native.url}", dialect: anthropic, api_key: "\${NATIVE_KEY}" }
  gpu:
    replicas:
      - { id: main, url: "${main.url}" }
  fallback:
    replicas:
      # weight 1,000,000 to 1: the dead replica is tried first but once in a million requests
      - { id: dead, url: "${dead.url}", weight: 1000000 }
      - { id: spare, url: "${spare.url}", weight: 1 }
  down:
    replicas:
      - { id: dead, url: "${dead.url}" }
auth:
  client_keys: ["\${CLIENT_KEY}"]
routing: { try_timeout_ms: 30000, deadline_ms: 120000, retry_on: [500, 502, 503, 504] }
---
apiVersion: serving.kserve.io/v1alpha1
kind: InferenceGraph
metadata:
  name: chat-graph
spec:
  nodes:
    root:
      routerType: Sequence
      steps:
        - serviceUrl: ${main.url}/v1/chat/completions
`;
  const file = path.join(tmp, "dialects.yaml");
  await writeFile(file, config);
  router = await serve(["--config", file, "--port", "0", "--persist-to", path.join(tmp, "state"), "--var", `CLIENT_KEY=${CLIENT_KEY}`, "--var", `NATIVE_KEY=${NATIVE_KEY}`], tmp);
  anthropic = new Anthropic({ apiKey: CLIENT_KEY, baseURL: router.url, maxRetries: 0 });
  openai = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${router.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await router?.stop("SIGTERM").catch(() => {});
  await Promise.all([main?.close(), dead?.close(), spare?.close(), native?.close()]);
  await rm(tmp, { recursive: true, force: true });
});

beforeEach(() => {
  main.resetStats();
  spare.resetStats();
  native.resetStats();
});

const script = (answer: ScriptedAnswer, server: FakeServer = main) => server.setBehaviour({ answer });
/** The chat-completions request the upstream got, parsed. */
const upstreamBody = (server: FakeServer = main, path = "/v1/chat/completions"): Record<string, unknown> => {
  const recent = server.stats().recent.filter((r) => r.path === path);
  return JSON.parse(recent[recent.length - 1]!.body) as Record<string, unknown>;
};

const WEATHER_TOOL = { name: "get_weather", description: "Weather in a city", input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] } };
const TWO_CALLS: ScriptedAnswer = {
  content: "Let me check both.",
  toolCalls: [
    { id: "call_paris", name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
    { id: "call_oslo", name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}' },
  ],
  usage: { prompt_tokens: 40, completion_tokens: 25 },
};

describe("POST /v1/messages with the Anthropic SDK", () => {
  it("answers text with system, the client's model name, usage with cache reads, and the router's headers", async () => {
    script({ content: "Bonjour!", usage: { prompt_tokens: 30, completion_tokens: 3, cached_tokens: 10 } });
    const { data, response } = await anthropic.messages
      .create({ model: "chat", max_tokens: 64, system: "Answer in French.", messages: [{ role: "user", content: "Hello" }], metadata: { user_id: "user-7" } })
      .withResponse();
    expect(data).toMatchObject({ type: "message", role: "assistant", model: "chat", content: [{ type: "text", text: "Bonjour!" }], stop_reason: "end_turn", stop_sequence: null });
    expect(data.id).toMatch(/^msg_/);
    expect(data.usage).toMatchObject({ input_tokens: 20, output_tokens: 3, cache_read_input_tokens: 10 });
    expect(response.headers.get("x-switchyard-replica")).toBe("main");
    expect(upstreamBody()).toEqual({
      model: "chat",
      max_tokens: 64,
      messages: [{ role: "system", content: "Answer in French." }, { role: "user", content: "Hello" }],
      user: "user-7",
    });
    // The client's key is the router's, never the upstream's.
    expect(main.stats().recent.at(-1)!.headers["x-api-key"]).toBeUndefined();
  });

  it("carries a multi-turn conversation with system blocks and an image", async () => {
    script({ content: "A cat." });
    await anthropic.messages.create({
      model: "chat",
      max_tokens: 32,
      system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Be kind." }],
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: [{ type: "text", text: "Hello." }] },
        { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] },
      ],
    });
    expect(upstreamBody().messages).toEqual([
      { role: "system", content: "Be brief.\n\nBe kind." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello." },
      { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] },
    ]);
  });

  it("names the stop reasons: max_tokens, and the stop sequence the upstream met", async () => {
    script({ content: "cut", finishReason: "length" });
    expect((await anthropic.messages.create({ model: "chat", max_tokens: 1, messages: [{ role: "user", content: "go" }] })).stop_reason).toBe("max_tokens");
    script({ content: "one two", stopReason: "END" });
    const stopped = await anthropic.messages.create({ model: "chat", max_tokens: 9, stop_sequences: ["END"], messages: [{ role: "user", content: "go" }] });
    expect(stopped).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "END" });
    expect(upstreamBody().stop).toEqual(["END"]);
  });

  it("streams text in pieces, with usage asked upstream and given in message_delta", async () => {
    script({ content: "The quick brown fox", usage: { prompt_tokens: 12, completion_tokens: 5 } });
    const stream = anthropic.messages.stream({ model: "chat", max_tokens: 64, messages: [{ role: "user", content: "Tell me" }] });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const message = await stream.finalMessage();
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "The quick brown fox" })]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.usage).toMatchObject({ input_tokens: 12, output_tokens: 5 });
    expect(types[0]).toBe("message_start");
    expect(types.filter((t) => t === "content_block_delta").length).toBe(7); // "The quick brown fox" in 3-character pieces
    expect(types.slice(-2)).toEqual(["message_delta", "message_stop"]);
    expect(upstreamBody()).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("streams two tool calls in one turn, their arguments split across chunks, as tool_use blocks", async () => {
    script(TWO_CALLS);
    const stream = anthropic.messages.stream({ model: "chat", max_tokens: 128, tools: [WEATHER_TOOL], tool_choice: { type: "any" }, messages: [{ role: "user", content: "Paris and Oslo?" }] });
    const partials: string[] = [];
    stream.on("inputJson", (piece) => partials.push(piece));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content.map((b) => b.type)).toEqual(["text", "tool_use", "tool_use"]);
    expect(message.content[1]).toMatchObject({ type: "tool_use", id: "call_paris", name: "get_weather", input: { city: "Paris", unit: "celsius" } });
    expect(message.content[2]).toMatchObject({ type: "tool_use", id: "call_oslo", name: "get_weather", input: { city: "Oslo", unit: "celsius" } });
    expect(partials.length).toBeGreaterThan(2); // the arguments came in pieces, as they streamed
    expect(message.usage).toMatchObject({ input_tokens: 40, output_tokens: 25 });
    expect(upstreamBody()).toMatchObject({
      tool_choice: "required",
      tools: [{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: WEATHER_TOOL.input_schema } }],
    });
  });

  it("completes a full tool round trip: tool_use, then tool_result (one an error), then the answer", async () => {
    script(TWO_CALLS);
    const first = await anthropic.messages.create({ model: "chat", max_tokens: 128, tools: [WEATHER_TOOL], messages: [{ role: "user", content: "Paris and Oslo?" }] });
    expect(first.stop_reason).toBe("tool_use");
    const uses = first.content.filter((b) => b.type === "tool_use");
    expect(uses.map((u) => u.id)).toEqual(["call_paris", "call_oslo"]);
    script({ content: "Paris is sunny; Oslo did not answer." });
    const second = await anthropic.messages.create({
      model: "chat",
      max_tokens: 128,
      tools: [WEATHER_TOOL],
      messages: [
        { role: "user", content: "Paris and Oslo?" },
        { role: "assistant", content: first.content },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_paris", content: "sunny, 21 C" },
            { type: "tool_result", tool_use_id: "call_oslo", content: [{ type: "text", text: "timeout" }], is_error: true },
            { type: "text", text: "Summarize." },
          ],
        },
      ],
    });
    expect(second.content).toEqual([expect.objectContaining({ type: "text", text: "Paris is sunny; Oslo did not answer." })]);
    expect(upstreamBody().messages).toEqual([
      { role: "user", content: "Paris and Oslo?" },
      {
        role: "assistant",
        content: "Let me check both.",
        tool_calls: [
          { id: "call_paris", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' } },
          { id: "call_oslo", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_paris", content: "sunny, 21 C" },
      { role: "tool", tool_call_id: "call_oslo", content: "Error: timeout" },
      { role: "user", content: [{ type: "text", text: "Summarize." }] },
    ]);
  });

  it("serves every target kind: RouteWise and a graph, streamed and not", async () => {
    script({ content: "routed", usage: { prompt_tokens: 4, completion_tokens: 1 } });
    const rw = await anthropic.messages.create({ model: "chat-rw", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).withResponse();
    expect(rw.data.content).toEqual([expect.objectContaining({ type: "text", text: "routed" })]);
    expect(rw.response.headers.get("x-switchyard-route")).toBe("paid");
    const rwStream = await anthropic.messages.stream({ model: "chat-rw", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(rwStream).toMatchObject({ stop_reason: "end_turn", usage: { input_tokens: 4, output_tokens: 1 } });
    const graph = await anthropic.messages.create({ model: "chat-graph", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    expect(graph.content).toEqual([expect.objectContaining({ type: "text", text: "routed" })]);
    const graphStream = await anthropic.messages.stream({ model: "chat-graph", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(graphStream.content).toEqual([expect.objectContaining({ type: "text", text: "routed" })]);
  });

  it("falls back to the next replica when the first fails before its headers", async () => {
    script({ content: "from the spare" }, spare);
    const { data, response } = await anthropic.messages.stream({ model: "chat-fallback", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).withResponse().then(async (r) => ({ ...r, data: await r.data.finalMessage() }));
    expect(data.content).toEqual([expect.objectContaining({ text: "from the spare" })]);
    expect(response.headers.get("x-switchyard-replica")).toBe("spare");
    expect(response.headers.get("x-switchyard-attempts")).toBe("2");
  });

  it("answers errors in Anthropic's shape: 529 overloaded_error when no replica answers, 404, 401 without a key, x-api-key accepted", async () => {
    const overloaded = await anthropic.messages.create({ model: "chat-down", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(Anthropic.APIError);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).status).toBe(529);
    expect((overloaded as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    const missing = await anthropic.messages.create({ model: "nope", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    const keyless = new Anthropic({ apiKey: "wrong", baseURL: router.url, maxRetries: 0 });
    expect(await keyless.messages.create({ model: "chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e)).toBeInstanceOf(Anthropic.AuthenticationError);
    // The SDK sends its key as x-api-key (it sent CLIENT_KEY that way in every test above).
    const raw = await fetch(`${router.url}/v1/messages`, { method: "POST", headers: { "x-api-key": CLIENT_KEY, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [] }) });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: is required" } });
  });

  it("ends the stream with an error event when the upstream breaks off mid-stream", async () => {
    main.setBehaviour({ answer: { content: "a long answer that breaks" }, streamCutAfter: 2 });
    const stream = anthropic.messages.stream({ model: "chat", max_tokens: 64, messages: [{ role: "user", content: "go" }] });
    const failure = await stream.finalMessage().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect(String((failure as Error).message)).toContain("broke off");
  });

  it("cancels the upstream request when the client aborts mid-stream", async () => {
    main.setBehaviour({ answer: { content: "x".repeat(300) }, chunkIntervalMs: 50 });
    const stream = anthropic.messages.stream({ model: "chat", max_tokens: 64, messages: [{ role: "user", content: "go" }] });
    let deltas = 0;
    for await (const event of stream) {
      if (event.type === "content_block_delta" && ++deltas === 2) break; // leaving the loop aborts the request
    }
    const deadline = Date.now() + ABORT_WAIT_MS;
    while (main.stats().aborted === 0 && Date.now() < deadline) await sleep(50);
    expect(main.stats().aborted).toBe(1);
  });

  it("estimates tokens at /v1/messages/count_tokens", async () => {
    const counted = await anthropic.messages.countTokens({ model: "chat", system: "Be brief.", messages: [{ role: "user", content: "x".repeat(400) }] });
    expect(counted.input_tokens).toBeGreaterThanOrEqual(100);
    expect(main.stats().requests).toBe(0);
  });
});

describe("POST /v1/responses with the OpenAI SDK", () => {
  const FUNCTION_TOOL = { type: "function" as const, name: "get_weather", description: "Weather in a city", parameters: WEATHER_TOOL.input_schema, strict: false };

  it("answers a string input with instructions, output_text and usage", async () => {
    script({ content: "Hi there", usage: { prompt_tokens: 9, completion_tokens: 2, cached_tokens: 4 } });
    const { data, response } = await openai.responses.create({ model: "chat", instructions: "Be terse.", input: "Hello", max_output_tokens: 50, user: "u-1" }).withResponse();
    expect(data).toMatchObject({ object: "response", status: "completed", model: "chat", output_text: "Hi there" });
    expect(data.id).toMatch(/^resp_/);
    expect(data.output).toEqual([expect.objectContaining({ type: "message", role: "assistant", status: "completed", content: [expect.objectContaining({ type: "output_text", text: "Hi there" })] })]);
    expect(data.usage).toMatchObject({ input_tokens: 9, output_tokens: 2, total_tokens: 11, input_tokens_details: { cached_tokens: 4 } });
    expect(response.headers.get("x-switchyard-replica")).toBe("main");
    expect(upstreamBody()).toEqual({ model: "chat", max_tokens: 50, user: "u-1", messages: [{ role: "system", content: "Be terse." }, { role: "user", content: "Hello" }] });
  });

  it("says incomplete when the output ran out of max_output_tokens", async () => {
    script({ content: "cut", finishReason: "length" });
    const res = await openai.responses.create({ model: "chat", input: "go", max_output_tokens: 1 });
    expect(res).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
  });

  it("streams text with numbered events in the API's order", async () => {
    script({ content: "Once upon a time", usage: { prompt_tokens: 5, completion_tokens: 4 } });
    const stream = await openai.responses.create({ model: "chat", input: "A story", stream: true });
    const events: { type: string; sequence_number: number }[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.filter((t) => t === "response.output_text.delta").length).toBe(6);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    const completed = events.at(-1) as unknown as { response: { usage: unknown; output: unknown[] } };
    expect(completed.response.usage).toMatchObject({ input_tokens: 5, output_tokens: 4 });
  });

  it("streams two function calls split across chunks, then takes their outputs back", async () => {
    script(TWO_CALLS);
    const stream = openai.responses.stream({ model: "chat", input: "Paris and Oslo?", tools: [FUNCTION_TOOL] });
    let argumentDeltas = 0;
    stream.on("response.function_call_arguments.delta", () => argumentDeltas++);
    const final = await stream.finalResponse();
    expect(argumentDeltas).toBeGreaterThan(2);
    const calls = final.output.filter((o) => o.type === "function_call");
    expect(calls).toEqual([
      expect.objectContaining({ type: "function_call", call_id: "call_paris", name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}', status: "completed" }),
      expect.objectContaining({ type: "function_call", call_id: "call_oslo", name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}', status: "completed" }),
    ]);
    expect(upstreamBody().tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: WEATHER_TOOL.input_schema, strict: false } }]);

    script({ content: "Sunny and cold." });
    const answer = await openai.responses.create({
      model: "chat",
      tools: [FUNCTION_TOOL],
      input: [
        { role: "user", content: "Paris and Oslo?" },
        ...calls.map((c) => ({ type: "function_call" as const, call_id: c.call_id, name: c.name, arguments: c.arguments })),
        { type: "function_call_output", call_id: "call_paris", output: "sunny" },
        { type: "function_call_output", call_id: "call_oslo", output: "cold" },
      ],
    });
    expect(answer.output_text).toBe("Sunny and cold.");
    expect(upstreamBody().messages).toEqual([
      { role: "user", content: "Paris and Oslo?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_paris", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' } },
          { id: "call_oslo", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_paris", content: "sunny" },
      { role: "tool", tool_call_id: "call_oslo", content: "cold" },
    ]);
  });

  it("serves RouteWise and a graph", async () => {
    script({ content: "routed" });
    expect((await openai.responses.create({ model: "chat-rw", input: "hi" })).output_text).toBe("routed");
    expect((await openai.responses.create({ model: "chat-graph", input: "hi" })).output_text).toBe("routed");
    const streamed = await openai.responses.stream({ model: "chat-graph", input: "hi" }).finalResponse();
    expect(streamed.output_text).toBe("routed");
  });

  it("leaves out tools chat completions cannot carry (hosted, namespaces), as Codex sends them, and names them in a header", async () => {
    script({ content: "Hi" });
    const namespace = { type: "namespace", name: "multi_agent_v1", description: "Sub-agents", tools: [{ ...FUNCTION_TOOL, name: "close_agent" }] };
    const tools = [FUNCTION_TOOL, namespace, { type: "web_search" }] as unknown as OpenAI.Responses.Tool[];
    const { data, response } = await openai.responses.create({ model: "chat", input: "say hi", tools }).withResponse();
    expect(data.output_text).toBe("Hi");
    expect(response.headers.get("x-switchyard-dropped-tools")).toBe("namespace:multi_agent_v1, web_search");
    expect((upstreamBody().tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(["get_weather"]);
  });

  it("refuses store: true and previous_response_id with a 400 that says the router is stateless, sending nothing", async () => {
    for (const extra of [{ store: true }, { previous_response_id: "resp_123" }]) {
      const refused = await openai.responses.create({ model: "chat", input: "hi", ...extra }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as Error).message).toContain("stateless");
    }
    expect(main.stats().requests).toBe(0);
  });

  it("ends the stream with response.failed when the upstream breaks off", async () => {
    main.setBehaviour({ answer: { content: "a long answer that breaks" }, streamCutAfter: 2 });
    const stream = await openai.responses.create({ model: "chat", input: "go", stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe("response.failed");
  });

  it("cancels the upstream request when the client aborts mid-stream", async () => {
    main.setBehaviour({ answer: { content: "x".repeat(300) }, chunkIntervalMs: 50 });
    const stream = await openai.responses.create({ model: "chat", input: "go", stream: true });
    let deltas = 0;
    for await (const event of stream) {
      if (event.type === "response.output_text.delta" && ++deltas === 2) break; // leaving the loop aborts the request
    }
    const deadline = Date.now() + ABORT_WAIT_MS;
    while (main.stats().aborted === 0 && Date.now() < deadline) await sleep(50);
    expect(main.stats().aborted).toBe(1);
  });
});

describe("an Anthropic-native replica (dialect: anthropic)", () => {
  const lastHeaders = () => native.stats().recent.at(-1)!.headers;

  it("passes a Messages request through untranslated, with the replica's key as x-api-key, and its answer as it came", async () => {
    script(TWO_CALLS, native);
    const request = { model: "chat-native", max_tokens: 128, system: "Be brief.", tools: [WEATHER_TOOL], messages: [{ role: "user" as const, content: "Paris and Oslo?" }], metadata: { user_id: "u-3" } };
    const { data, response } = await anthropic.messages.create(request).withResponse();
    expect(data.id).toBe("msg_native"); // the upstream's own id: nothing was rebuilt
    expect(data.content.map((b) => b.type)).toEqual(["text", "tool_use", "tool_use"]);
    expect(response.headers.get("x-switchyard-replica")).toBe("claude");
    expect(upstreamBody(native, "/v1/messages")).toEqual({ ...request, model: "claude-upstream" });
    expect(lastHeaders()).toMatchObject({ "x-api-key": NATIVE_KEY, "anthropic-version": expect.any(String) });
    expect(lastHeaders().authorization).toBeUndefined();

    const streamed = await anthropic.messages.stream({ ...request }).finalMessage();
    expect(streamed).toMatchObject({ id: "msg_native", stop_reason: "tool_use", usage: { input_tokens: 40, output_tokens: 25 } });
    expect(streamed.content[2]).toMatchObject({ type: "tool_use", id: "call_oslo", input: { city: "Oslo", unit: "celsius" } });
  });

  it("passes through, untranslated, what only Anthropic can take (a server tool, a document) when every replica speaks it", async () => {
    script({ content: "Searched." }, native);
    const raw = {
      model: "chat-native",
      max_tokens: 64,
      tools: [{ type: "web_search_20250305", name: "web_search", max_uses: 1 }],
      messages: [{ role: "user", content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "a memo" } }, { type: "text", text: "Search for it." }] }],
    };
    const res = await fetch(`${router.url}/v1/messages`, { method: "POST", headers: { "x-api-key": CLIENT_KEY, "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify(raw) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: "msg_native", content: [{ type: "text", text: "Searched." }] });
    expect(upstreamBody(native, "/v1/messages")).toEqual({ ...raw, model: "claude-upstream" });
    // The same request to a chat-completions pool cannot be translated: refused, nothing sent.
    const refused = await fetch(`${router.url}/v1/messages`, { method: "POST", headers: { "x-api-key": CLIENT_KEY, "content-type": "application/json" }, body: JSON.stringify({ ...raw, model: "chat" }) });
    expect(refused.status).toBe(400);
    expect(main.stats().requests).toBe(0);
  });

  it("translates a chat completion to Messages and the answer back, streamed tool calls included", async () => {
    script(TWO_CALLS, native);
    const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather in a city", parameters: WEATHER_TOOL.input_schema } }];
    const messages = [{ role: "system" as const, content: "Be brief." }, { role: "user" as const, content: "Paris and Oslo?" }];
    const whole = await openai.chat.completions.create({ model: "chat-native", messages, tools, tool_choice: "required", max_tokens: 100 });
    expect(whole.choices[0]!.finish_reason).toBe("tool_calls");
    expect(whole.choices[0]!.message.tool_calls).toEqual([
      { id: "call_paris", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' } },
      { id: "call_oslo", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}' } },
    ]);
    expect(whole.usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 25 });
    expect(upstreamBody(native, "/v1/messages")).toEqual({
      model: "claude-upstream",
      system: "Be brief.",
      messages: [{ role: "user", content: [{ type: "text", text: "Paris and Oslo?" }] }],
      max_tokens: 100,
      tools: [{ name: "get_weather", description: "Weather in a city", input_schema: WEATHER_TOOL.input_schema }],
      tool_choice: { type: "any" },
    });
    expect(lastHeaders()["x-api-key"]).toBe(NATIVE_KEY);

    const stream = await openai.chat.completions.create({ model: "chat-native", messages, tools, stream: true, stream_options: { include_usage: true } });
    const args = ["", ""];
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) args[call.index] += call.function?.arguments ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(args).toEqual(['{"city":"Paris","unit":"celsius"}', '{"city":"Oslo","unit":"celsius"}']);
    expect(finish).toBe("tool_calls");
    expect(usage).toMatchObject({ prompt_tokens: 40, completion_tokens: 25 });
  });

  it("serves a RouteWise route that speaks Anthropic: Messages passed through, chat translated, streamed and not", async () => {
    script({ content: "Provider hello", usage: { prompt_tokens: 8, completion_tokens: 2 } }, native);
    const { data, response } = await anthropic.messages.create({ model: "chat-rw-native", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }).withResponse();
    expect(data).toMatchObject({ id: "msg_native", content: [{ type: "text", text: "Provider hello" }] });
    expect(response.headers.get("x-switchyard-route")).toBe("claude-paid");
    expect(upstreamBody(native, "/v1/messages")).toEqual({ model: "claude-provider", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
    expect(lastHeaders()["x-api-key"]).toBe(NATIVE_KEY);
    const chat = await openai.chat.completions.create({ model: "chat-rw-native", messages: [{ role: "user", content: "hi" }] });
    expect(chat.choices[0]!.message.content).toBe("Provider hello");
    expect(chat.usage).toMatchObject({ prompt_tokens: 8, completion_tokens: 2 });
    // Anthropic's stream always carries usage (the meter reads it for RouteWise's spend); a client that asked none gets no usage chunk.
    const stream = await openai.chat.completions.create({ model: "chat-rw-native", messages: [{ role: "user", content: "hi" }], stream: true });
    let text = "";
    let usageSeen = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      usageSeen ||= chunk.usage != null;
    }
    expect(text).toBe("Provider hello");
    expect(usageSeen).toBe(false);
  });

  it("serves the Responses API through the same two translations", async () => {
    script({ content: "Native hello", usage: { prompt_tokens: 6, completion_tokens: 2 } }, native);
    const res = await openai.responses.create({ model: "chat-native", input: "hi" });
    expect(res.output_text).toBe("Native hello");
    expect(res.usage).toMatchObject({ input_tokens: 6, output_tokens: 2 });
    const streamed = await openai.responses.stream({ model: "chat-native", input: "hi" }).finalResponse();
    expect(streamed.output_text).toBe("Native hello");
  });
});
