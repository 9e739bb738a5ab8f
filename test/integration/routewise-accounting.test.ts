/**
 * What a client can and cannot steer in RouteWise's accounting, against fake metered
 * providers on 127.0.0.1 that record what they saw (tools/fakes/fake-provider.ts): usage
 * is asked for upstream whatever the client asked, what changes the price is priced or
 * refused, the prompt estimate counts the whole body, and account headers cross in
 * neither direction where the router sends its own credential.
 */
import { describe, expect, it } from "vitest";
import type { FleetProvider } from "../support/fleet";
import { chatRequests as completions, providersClosedAfterEach, spawnServer } from "../support/fleet";
import { ADMIN_TOKEN, openAIErrorOf, post, publish } from "../support/router";
import { metricsText, metricValue } from "../support/state";

const providers = providersClosedAfterEach();
const unique = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const OPERATOR_KEY = "sk-operator-key";
const PAID = `provider_type: on_demand, api_key: ${OPERATOR_KEY}, pricing: { input: 0.000001, output: 0.000002 }`;
const question = [{ role: "user", content: "How deep is the sea?" }];

/** One paid route, on the operator's key. */
async function paidModel(provider: FleetProvider): Promise<string> {
  const model = unique("acct");
  await publish(`models:\n  ${model}:\n    router: routewise\n    router_params: { envelope_min_samples: 1 }\n    routes:\n      - { id: paid, url: "${provider.url}", ${PAID} }\n`);
  return model;
}

/**
 * A free quota route of `limit` tokens next to the paid route; alpha 0 sends every request
 * the quota can take to it, so which route served tells what the router thought the
 * request would use.
 */
async function quotaModel(paid: FleetProvider, quota: FleetProvider, limit: number): Promise<string> {
  const model = unique("acctq");
  await publish(
    `models:\n  ${model}:\n    router: routewise\n    router_params: { budget_alpha: 0, envelope_min_samples: 1 }\n    routes:\n` +
      `      - { id: paid, url: "${paid.url}", ${PAID} }\n` +
      `      - { id: sub, url: "${quota.url}", api_key: ${OPERATOR_KEY}, provider_type: quota, quota: { limit: ${limit} }, quota_source: { url: "${quota.url}/usage", used_path: data.used, window: rolling, window_s: 3600 } }\n`,
  );
  const sample = (route: string) => ({ route, ttft_ms: 5, total_ms: 10, prompt_tokens: 6, output_tokens: 8 });
  const res = await post(`/admin/routewise/${model}/calibrate`, { samples: [sample("paid"), sample("sub")] }, admin);
  if (res.status !== 200) throw new Error(`calibrate answered ${res.status}: ${await res.text()}`);
  return model;
}

async function ask(model: string, extra: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await post("/v1/chat/completions", { model, messages: question, ...extra }, headers);
  return { res, route: res.headers.get("x-switchyard-route") };
}

const lastBody = async (p: FleetProvider) => JSON.parse((await p.stats()).recent.filter((r) => r.path === "/v1/chat/completions").at(-1)!.body) as Record<string, unknown>;

/** An event stream's data events, parsed (`[DONE]` as the string). */
function events(text: string): unknown[] {
  return text
    .split("\n\n")
    .map((e) => e.trim())
    .filter((e) => e.startsWith("data:"))
    .map((e) => e.slice(5).trim())
    .map((d) => (d === "[DONE]" ? d : (JSON.parse(d) as unknown)));
}
const usageChunks = (list: unknown[]) => list.filter((e) => typeof e === "object" && e !== null && (e as { usage?: unknown }).usage != null);

describe("usage is asked for upstream", () => {
  it("a stream without stream_options gets include_usage upstream, the client's stream keeps its shape, and the spend is the provider's count", async () => {
    const [provider] = await providers([{ outputTokens: 8 }], "usage");
    const model = await paidModel(provider!);
    const { res } = await ask(model, { stream: true });
    expect(res.status).toBe(200);
    const seen = events(await res.text());
    expect((await lastBody(provider!)).stream_options).toEqual({ include_usage: true });
    expect(usageChunks(seen), "the usage chunk the client did not ask for").toEqual([]);
    expect(seen.filter((e) => typeof e === "object" && (e as { choices: unknown[] }).choices.length === 0)).toEqual([]);
    expect(seen.filter((e) => typeof e === "object" && "usage" in (e as object)), "not even usage: null").toEqual([]);
    expect(seen.at(-1)).toBe("[DONE]");
    expect(seen.filter((e) => typeof e === "object").length).toBe(10); // the role chunk, 8 tokens, the finish

    const billed = (await provider!.stats()).tokens;
    const text = await metricsText();
    expect(metricValue(text, "switchyard_routewise_tokens_total", { model, kind: "prompt" })).toBe(billed.prompt);
    expect(metricValue(text, "switchyard_routewise_tokens_total", { model, kind: "output" })).toBe(billed.completion);
    expect(billed.completion).toBe(8);
  });

  it("a client that asked for usage gets its usage chunk; one that said include_usage: false does not, and usage is still asked for", async () => {
    const [provider] = await providers([{ outputTokens: 4 }], "usage2");
    const model = await paidModel(provider!);
    const asked = await ask(model, { stream: true, stream_options: { include_usage: true } });
    const chunks = usageChunks(events(await asked.res.text()));
    expect(chunks).toHaveLength(1);
    expect((chunks[0] as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(4);

    const declined = await ask(model, { stream: true, stream_options: { include_usage: false } });
    expect(usageChunks(events(await declined.res.text()))).toEqual([]);
    expect((await lastBody(provider!)).stream_options).toEqual({ include_usage: true });
    expect(metricValue(await metricsText(), "switchyard_routewise_tokens_total", { model, kind: "output" })).toBe(8);
  });
});

describe("what changes the price is priced or refused", () => {
  it("n is priced as n times the output: n 8 does not fit a quota one choice fits, and is billed eight times", async () => {
    const [paid, quota] = await providers([{ outputTokens: 8 }, { outputTokens: 8 }], "n");
    // One choice needs ~6 prompt + 8 output tokens; eight need ~70: more than the quota's 50.
    const model = await quotaModel(paid!, quota!, 50);
    const eight = await ask(model, { n: 8, max_tokens: 16 });
    expect(eight.res.status).toBe(200);
    expect(eight.route).toBe("paid");
    expect(((await eight.res.json()) as { choices: unknown[] }).choices).toHaveLength(8);
    expect((await ask(model, { n: 1, max_tokens: 16 })).route).toBe("sub");
    expect(metricValue(await metricsText(), "switchyard_routewise_tokens_total", { model, route: "paid", kind: "output" })).toBe(64);
  });

  it("n that is not an integer from 1 to 128 is refused with a 400 naming n, and nothing is sent", async () => {
    const [provider] = await providers([{}], "badn");
    const model = await paidModel(provider!);
    for (const n of [0, 2.5, "8", 129, -1]) {
      const { res } = await ask(model, { n });
      expect(res.status, JSON.stringify(n)).toBe(400);
      expect(await openAIErrorOf(res)).toMatchObject({ param: "n", code: "invalid_n" });
    }
    expect(await completions(provider!)).toBe(0);
  });

  it("a service tier other than auto or default is refused; those two pass", async () => {
    const [provider] = await providers([{}], "tier");
    const model = await paidModel(provider!);
    for (const tier of ["priority", "flex", "scale", 3]) {
      const { res } = await ask(model, { service_tier: tier });
      expect(res.status, String(tier)).toBe(400);
      expect(await openAIErrorOf(res)).toMatchObject({ param: "service_tier", code: "unsupported_service_tier" });
    }
    expect(await completions(provider!)).toBe(0);
    for (const tier of ["auto", "default"]) {
      const { res } = await ask(model, { service_tier: tier });
      expect(res.status, tier).toBe(200);
      expect((await lastBody(provider!)).service_tier).toBe(tier);
    }
  });

  it("audio in or out, files and web search are refused: the router cannot price them", async () => {
    const [provider] = await providers([{}], "audio");
    const model = await paidModel(provider!);
    const audioPart = [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }] }];
    const filePart = [{ role: "user", content: [{ type: "file", file: { file_id: "file-123" } }] }];
    for (const [extra, param] of [
      [{ messages: audioPart }, "messages"],
      [{ messages: filePart }, "messages"],
      [{ modalities: ["text", "audio"] }, "modalities"],
      [{ audio: { voice: "alloy", format: "wav" } }, "audio"],
      [{ web_search_options: {} }, "web_search_options"],
    ] as const) {
      const { res } = await ask(model, extra);
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(await openAIErrorOf(res), JSON.stringify(extra)).toMatchObject({ param, code: "unpriced_content" });
    }
    expect(await completions(provider!)).toBe(0);
    expect((await ask(model, { modalities: ["text"] })).res.status).toBe(200);
  });
});

describe("the prompt estimate counts the whole body", () => {
  const MIB = 1024 * 1024;

  it("a 1 MiB body is not a few tokens: text in any part, and an image, count against a 1,000-token quota", async () => {
    const [paid, quota] = await providers([{ outputTokens: 8 }, { outputTokens: 8 }], "big");
    const model = await quotaModel(paid!, quota!, 1_000);
    const image = `data:image/png;base64,${"A".repeat(MIB)}`;
    const bodies = {
      image: [{ role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: image } }] }],
      // A part type the prefix renderer shows as a placeholder: its text is still sent, and billed.
      other: [{ role: "user", content: [{ type: "input_text", text: "x".repeat(MIB) }] }],
      // Text outside the messages (a schema the provider reads) is prompt too.
      schema: question,
    };
    const schema = { type: "json_schema", json_schema: { name: "s", schema: { description: "y".repeat(MIB) } } };
    expect((await ask(model, { messages: bodies.image, max_tokens: 8 })).route, "image").toBe("paid");
    expect((await ask(model, { messages: bodies.other, max_tokens: 8 })).route, "other part").toBe("paid");
    expect((await ask(model, { messages: bodies.schema, response_format: schema, max_tokens: 8 })).route, "schema").toBe("paid");
    expect((await ask(model, { max_tokens: 8 })).route, "a short question fits").toBe("sub");
  });
});

describe("account headers", () => {
  it("a route with the operator's key gets no client account headers, and its account headers do not reach the client", async () => {
    const accountHeaders = { "openai-organization": "org-operator", "openai-project": "proj-operator", "openai-processing-ms": "12", "x-request-id": "req-1" };
    const [provider] = await providers([{ responseHeaders: accountHeaders }], "hdr");
    const model = await paidModel(provider!);
    for (const stream of [false, true]) {
      const { res } = await ask(model, { stream }, { "OpenAI-Organization": "org-client", "OpenAI-Project": "proj-client", "x-goog-user-project": "client-project", "x-trace": "kept" });
      expect(res.status).toBe(200);
      await res.text();
      const seen = (await provider!.stats()).recent.at(-1)!.headers;
      expect(seen.authorization).toBe(`Bearer ${OPERATOR_KEY}`);
      expect(seen["openai-organization"], `stream ${stream}`).toBeUndefined();
      expect(seen["openai-project"]).toBeUndefined();
      expect(seen["x-goog-user-project"]).toBeUndefined();
      expect(seen["x-trace"]).toBe("kept");
      expect(res.headers.get("openai-organization"), `stream ${stream}`).toBeNull();
      expect(res.headers.get("openai-project")).toBeNull();
      expect(res.headers.get("openai-processing-ms")).toBe("12");
      expect(res.headers.get("x-request-id")).toBe("req-1");
    }
  });

  it("pools too: a replica with an api_key gets no client account headers; one without gets them; neither's account headers reach the client", async () => {
    const answer = { "openai-organization": "org-operator", "openai-project": "proj-operator" };
    const [keyed, open] = await Promise.all([spawnServer({ responseHeaders: answer }, "keyed"), spawnServer({ responseHeaders: answer }, "open")]);
    try {
      const [a, b] = [unique("keyed"), unique("open")];
      await publish(`models:\n  ${a}: { pool: ${a} }\n  ${b}: { pool: ${b} }\npools:\n  ${a}:\n    replicas: [{ id: k, url: "${keyed.url}", api_key: ${OPERATOR_KEY} }]\n  ${b}:\n    replicas: [{ id: o, url: "${open.url}" }]\nrouting: { shared_state: false }\n`);
      for (const [model, server, forwarded] of [[a, keyed, false], [b, open, true]] as const) {
        const res = await post("/v1/chat/completions", { model, messages: question }, { "OpenAI-Organization": "org-client", "OpenAI-Project": "proj-client" });
        expect(res.status).toBe(200);
        expect(res.headers.get("openai-organization"), model).toBeNull();
        expect(res.headers.get("openai-project")).toBeNull();
        const seen = (await server.stats()).recent.at(-1)!.headers;
        expect(seen["openai-organization"], model).toBe(forwarded ? "org-client" : undefined);
        expect(seen["openai-project"]).toBe(forwarded ? "proj-client" : undefined);
      }
    } finally {
      await Promise.all([keyed.close(), open.close()]);
    }
  });
});
