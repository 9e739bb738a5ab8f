/**
 * The client dialects the router translates: Anthropic's Messages API and OpenAI's
 * Responses API. Each request is translated to a chat completion (src/core/dialects/),
 * called through the model-call layer like any chat completion (so every target kind
 * serves it: pools, RouteWise provider sets, graphs), and its answer translated back
 * (src/app/model-call/dialect-answer.ts). Nothing is sent upstream for a request the
 * translation refuses.
 */
import type { ModelOutcome } from "../../app/model-call/call";
import { callModel } from "../../app/model-call/call";
import type { DialectCodec } from "../../app/model-call/dialect-answer";
import { dialectAnswer } from "../../app/model-call/dialect-answer";
import { chatToAnthropic } from "../../core/dialects/anthropic-answer";
import { anthropicToChat } from "../../core/dialects/anthropic-request";
import { AnthropicStream } from "../../core/dialects/anthropic-stream";
import type { Refusal } from "../../core/dialects/chat";
import { isRecord } from "../../core/dialects/chat";
import { chatToResponse } from "../../core/dialects/responses-answer";
import { responsesToChat } from "../../core/dialects/responses-request";
import { ResponsesStream } from "../../core/dialects/responses-stream";
import { estimatePromptTokens } from "../../core/routewise/tokens";
import type { ModelTarget } from "../../core/targets/model-target";
import { modelTarget } from "../../core/targets/model-target";
import { bearerToken } from "../../lib/crypto";
import { parseJsonObject } from "./body";
import { X_API_KEY_OR_BEARER } from "./client-auth";
import { adminPin } from "./inference";
import type { Call, ClientCredential } from "./route";

const CHAT_PATH = "/v1/chat/completions";

/** `POST /v1/messages`. */
export async function anthropicMessages(call: Call<"required">): Promise<Response> {
  const credential = X_API_KEY_OR_BEARER;
  const parsed = parseJsonObject(call.body);
  if (!parsed.ok) return call.errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const asked = anthropicToChat(parsed.json);
  if (!asked.ok) return (await untranslated(call, parsed.json, credential)) ?? refusal(call, asked);
  const id = `msg_${randomId()}`;
  const frame = { id, model: asked.model, stopSequences: asked.stopSequences };
  const codec: DialectCodec = { json: (c) => chatToAnthropic(c, frame) as unknown as Record<string, unknown>, stream: () => new AnthropicStream(frame) };
  return translated(call, asked.model, asked.chat, asked.stream, affinityIdentity(credential.read(call.request), asked.userId), codec, parsed.json);
}

/**
 * `POST /v1/messages/count_tokens`: the router's estimate of the prompt's tokens (its
 * RouteWise estimate of the translated request, about four characters a token, each image
 * 1,500), not a tokenizer's count. `max_tokens` is not needed here, as with Anthropic.
 */
export function anthropicCountTokens(call: Call<"required">): Response {
  const parsed = parseJsonObject(call.body);
  if (!parsed.ok) return call.errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const asked = anthropicToChat({ ...parsed.json, max_tokens: parsed.json.max_tokens ?? 1 });
  if (!asked.ok) return refusal(call, asked);
  if (!modelTarget(call.snapshot, asked.model)) return notFound(call, asked.model);
  const { max_tokens: _ignored, ...prompt } = asked.chat;
  return Response.json({ input_tokens: estimatePromptTokens(prompt) }, { headers: { "x-switchyard-estimate": "true" } });
}

/** `POST /v1/responses` (stateless). */
export async function openAIResponses(call: Call<"required">): Promise<Response> {
  const parsed = parseJsonObject(call.body);
  if (!parsed.ok) return call.errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const asked = responsesToChat(parsed.json);
  if (!asked.ok) return refusal(call, asked);
  const frame = { id: `resp_${randomId()}`, model: asked.model, createdAt: Math.floor(Date.now() / 1000), echo: asked.echo };
  const codec: DialectCodec = { json: (c) => chatToResponse(c, frame), stream: () => new ResponsesStream(frame) };
  const answer = await translated(call, asked.model, asked.chat, asked.stream, affinityIdentity(bearerToken(call.request), asked.user), codec, undefined, RESPONSES_FIELDS);
  if (asked.dropped.length === 0) return answer;
  // The client learns which of its tools the model never saw.
  const headers = new Headers(answer.headers);
  headers.set("x-switchyard-dropped-tools", asked.dropped.join(", "));
  return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers });
}

/** Chat-completions fields a Responses request sets under its own names (responses-request.ts). */
const RESPONSES_FIELDS: Readonly<Record<string, string>> = { response_format: "text.format", max_tokens: "max_output_tokens", reasoning_effort: "reasoning.effort" };

/** `anthropic`: the client's own Messages body, which an Anthropic-native replica gets as is (and whose answer is passed on as is). */
async function translated(call: Call<"required">, model: string, chat: Record<string, unknown>, stream: boolean, identity: string | undefined, codec: DialectCodec, anthropic?: Record<string, unknown>, fields: Readonly<Record<string, string>> = {}): Promise<Response> {
  const { errors } = call;
  const target = modelTarget(call.snapshot, model);
  if (!target) return notFound(call, model);
  const outcome = await modelCall(call, target, chat, identity, anthropic);
  if (!outcome.ok) {
    // A refusal of the translated chat request names the field as the client wrote it.
    const own = outcome.param !== undefined && Object.hasOwn(fields, outcome.param) ? fields[outcome.param]! : undefined;
    const message = own !== undefined ? outcome.message.replace(`${outcome.param}:`, `${own}:`) : outcome.message;
    return errors.reply(outcome.status, message, outcome.code, outcome.headers, own ?? outcome.param);
  }
  if (outcome.dialect === "anthropic") return outcome.response; // an Anthropic-native replica answered a Messages request: as it came
  const answer = await dialectAnswer(outcome.response, codec, stream);
  if (!answer.ok) return errors.reply(answer.status, answer.message, answer.code ?? (answer.status === 502 ? "untranslatable_answer" : "upstream_error"), routerHeaders(outcome.response.headers), answer.param);
  return answer.response;
}

/**
 * A Messages request the translation cannot take (a server tool, a document block…) for
 * a pool whose every replica speaks Anthropic: nothing needs translating, so it passes
 * through as it came and the upstream judges it. Null when the model is not such a pool.
 */
async function untranslated(call: Call<"required">, json: Record<string, unknown>, credential: ClientCredential): Promise<Response | null> {
  const target = typeof json.model === "string" ? modelTarget(call.snapshot, json.model) : null;
  if (target?.kind !== "pool" || target.route.candidates.length === 0 || !target.route.candidates.every((r) => r.dialect === "anthropic")) return null;
  const metadata = isRecord(json.metadata) ? json.metadata : {};
  const user = typeof metadata.user_id === "string" ? metadata.user_id : null;
  const outcome = await modelCall(call, target, null, affinityIdentity(credential.read(call.request), user), json);
  return outcome.ok ? outcome.response : call.errors.reply(outcome.status, outcome.message, outcome.code, outcome.headers, outcome.param);
}

/** The request for a model, as a chat completion (`chat`) and, when the client spoke Anthropic, its own Messages body. */
async function modelCall(call: Call<"required">, target: ModelTarget, chat: Record<string, unknown> | null, identity: string | undefined, anthropic?: Record<string, unknown>): Promise<ModelOutcome> {
  const { request, env, snapshot } = call;
  const forced = target.kind === "pool" && request.headers.has("x-route-pin") ? await adminPin(request, env.ADMIN_TOKEN) : null;
  return callModel(
    { env, ctx: call.ctx, random: call.deps.random, state: call.deps.state, snapshot, trace: call.trace },
    target,
    {
      dialect: { kind: "openai", apiPath: CHAT_PATH },
      body: chat === null ? call.body : new TextEncoder().encode(JSON.stringify(chat)),
      json: chat,
      request,
      bearer: identity,
      forced,
      startedAt: call.startedAt,
      principal: call.principal,
      ...(anthropic && { native: { anthropic } }),
    },
  );
}

/**
 * Whose session this is, for affinity (which hashes it, never keeping it): the client's
 * key, and within it the user the request names (`metadata.user_id`, `user`), so one key
 * serving many users keeps each user's pins apart.
 */
function affinityIdentity(key: string | undefined, user: string | null): string | undefined {
  if (user === null || user === "") return key;
  return `${key ?? ""}\u0000user:${user}`;
}

function refusal(call: Call<"required">, refused: Refusal): Response {
  return call.errors.reply(400, refused.message, "invalid_request", {}, refused.param);
}

function notFound(call: Call<"required">, model: string): Response {
  return call.errors.reply(404, `The model '${model}' does not exist or you do not have access to it`, "model_not_found", {}, "model");
}

/** What an error answer in the client's shape keeps of the answer it replaces: the router's own headers, the principal's limits, and when to come back. */
function routerHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) if (name.startsWith("x-switchyard-") || name.startsWith("x-ratelimit-") || name === "retry-after") out[name] = value;
  return out;
}

function randomId(): string {
  return crypto.randomUUID().replace(/-/g, "").slice(0, 24);
}
