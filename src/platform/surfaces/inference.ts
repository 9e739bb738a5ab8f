import type { Dialect } from "../../app/model-call/call";
import { callModel } from "../../app/model-call/call";
import { askedOutputTokens } from "../../core/routewise/tokens";
import { modelTarget } from "../../core/targets/model-target";
import { bearerToken, secretEquals } from "../../lib/crypto";
import { parseJsonObject } from "./body";
import type { Call } from "./route";

/** OpenAI surface: the model comes from the JSON body (body-based routing); `apiPath` is forwarded as is. */
export async function openAIInference(call: Call<"required">, apiPath: string): Promise<Response> {
  const { errors } = call;
  const parsed = parseJsonObject(call.body);
  if (!parsed.ok) return errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const model = parsed.json.model;
  if (model === undefined || model === null) return errors.reply(400, "Missing required parameter: 'model'", "missing_model", {}, "model");
  if (typeof model !== "string" || model === "") return errors.reply(400, "'model' must be a non-empty string", "invalid_model", {}, "model");
  const asked = askedOutputTokens(parsed.json);
  if (!asked.ok) return errors.reply(400, asked.message, "invalid_max_tokens", {}, asked.param);
  return answer(call, model, { kind: "openai", apiPath }, parsed.json);
}

/** KServe's v1/v2 inference protocols: the model comes from the path; the body is passed on untouched. */
export async function protocolInference(call: Call<"required">, protocol: "v1" | "v2"): Promise<Response> {
  const version = call.params.version;
  if (version !== undefined && !MODEL_VERSION.test(version)) return call.errors.reply(400, `the model version in the path must be 1-64 letters, digits and . _ -, starting with a letter or digit`, "invalid_path");
  return answer(call, call.params.model!, { kind: "kserve", protocol, ...(version !== undefined && { version }) }, null);
}

const MODEL_VERSION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/; // Triton's versions are numbers; a name never climbs a path (no `..` or `/`)

/** The model's target is called through the model-call layer; its outcome is worded in the surface's shape. */
async function answer(call: Call<"required">, model: string, dialect: Dialect, json: Record<string, unknown> | null): Promise<Response> {
  const { request, env, snapshot, errors } = call;
  const target = modelTarget(snapshot, model);
  if (!target) return errors.reply(404, `The model '${model}' does not exist or you do not have access to it`, "model_not_found", {}, "model");
  const forced = target.kind === "pool" && request.headers.has("x-route-pin") ? await adminPin(request, env.ADMIN_TOKEN) : null;
  const outcome = await callModel(
    { env, ctx: call.ctx, random: call.deps.random, state: call.deps.state, snapshot, trace: call.trace },
    target,
    { dialect, body: call.body, json, request, bearer: bearerToken(request), forced, startedAt: call.startedAt, principal: call.principal },
  );
  return outcome.ok ? outcome.response : errors.reply(outcome.status, outcome.message, outcome.code, outcome.headers, outcome.param);
}

/**
 * `X-Route-Pin: <replica>` is an operator's override and counts only with the admin
 * token in `X-Switchyard-Admin-Token`; without it the header is ignored (and, like every
 * router header, never forwarded).
 */
export async function adminPin(request: Request, adminToken: string | undefined): Promise<string | null> {
  const pin = request.headers.get("x-route-pin");
  const token = request.headers.get("x-switchyard-admin-token");
  if (!pin || !token || !adminToken) return null;
  return (await secretEquals(token, adminToken)) ? pin.trim() : null;
}
