import type { Dialect } from "../../app/model-call/call";
import { callModel } from "../../app/model-call/call";
import { modelTarget } from "../../core/targets/model-target";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import type { RandomSource } from "../../lib/random";
import type { IsolateState } from "../../app/state/isolate-state";
import { bearerToken, secretEquals } from "../../lib/crypto";
import type { ConfigSource } from "../config-source";
import type { Env } from "../env";
import { parseJsonObject } from "./body";
import type { ErrorStyle } from "./error-style";
import { KSERVE_PROTOCOL_ERRORS, OPENAI_ERRORS } from "./error-style";
import { decodeSegment, openRequest } from "./preamble";

export interface InferenceDeps {
  configSource: ConfigSource;
  random: RandomSource;
  state: IsolateState;
}

/** OpenAI surface: the model comes from the JSON body (body-based routing). */
export async function handleInference(request: Request, env: Env, ctx: ExecutionContext, apiPath: string, deps: InferenceDeps): Promise<Response> {
  const startedAt = Date.now();
  const errors = OPENAI_ERRORS;
  const opened = await openRequest(request, env, deps.configSource, errors, { auth: "client", body: true });
  if (!opened.ok) return opened.response;
  const parsed = parseJsonObject(opened.body);
  if (!parsed.ok) return errors.reply(parsed.problem.status, parsed.problem.message, parsed.problem.code);
  const model = parsed.json.model;
  if (model === undefined || model === null) return errors.reply(400, "Missing required parameter: 'model'", "missing_model", {}, "model");
  if (typeof model !== "string" || model === "") return errors.reply(400, "'model' must be a non-empty string", "invalid_model", {}, "model");
  return answer({ request, env, ctx, deps, snapshot: opened.snapshot, errors, model, dialect: { kind: "openai", apiPath }, body: opened.body, json: parsed.json, startedAt });
}

/**
 * KServe's v1/v2 inference protocols: the model comes from the path (still percent-encoded:
 * it is decoded only after the client is authenticated); the body is passed on untouched.
 */
export async function handleProtocolInference(request: Request, env: Env, ctx: ExecutionContext, protocol: "v1" | "v2", rawModel: string, deps: InferenceDeps): Promise<Response> {
  const startedAt = Date.now();
  const errors = KSERVE_PROTOCOL_ERRORS;
  const opened = await openRequest(request, env, deps.configSource, errors, { auth: "client", body: true });
  if (!opened.ok) return opened.response;
  const model = decodeSegment(rawModel);
  if (model === null || model === "") return errors.reply(400, "the model name in the path is not valid percent-encoding", "invalid_path");
  return answer({ request, env, ctx, deps, snapshot: opened.snapshot, errors, model, dialect: { kind: "kserve", protocol }, body: opened.body, json: null, startedAt });
}

interface Asked {
  request: Request;
  env: Env;
  ctx: ExecutionContext;
  deps: InferenceDeps;
  snapshot: ConfigSnapshot;
  errors: ErrorStyle;
  model: string;
  dialect: Dialect;
  body: Uint8Array;
  json: Record<string, unknown> | null;
  startedAt: number;
}

/** The model's target is called through the model-call layer; its outcome is worded in the surface's shape. */
async function answer(a: Asked): Promise<Response> {
  const target = modelTarget(a.snapshot, a.model);
  if (!target) return a.errors.reply(404, `The model '${a.model}' does not exist or you do not have access to it`, "model_not_found", {}, "model");
  const forced = target.kind === "pool" && a.request.headers.has("x-route-pin") ? await adminPin(a.request, a.env.ADMIN_TOKEN) : null;
  const outcome = await callModel(
    { env: a.env, ctx: a.ctx, random: a.deps.random, state: a.deps.state, snapshot: a.snapshot },
    target,
    { dialect: a.dialect, body: a.body, json: a.json, request: a.request, bearer: bearerToken(a.request), forced, startedAt: a.startedAt },
  );
  return outcome.ok ? outcome.response : a.errors.reply(outcome.status, outcome.message, outcome.code, outcome.headers, outcome.param);
}

/**
 * `X-Route-Pin: <replica>` is an operator's override and counts only with the admin
 * token in `X-Switchyard-Admin-Token`; without it the header is ignored (and, like every
 * router header, never forwarded).
 */
async function adminPin(request: Request, adminToken: string | undefined): Promise<string | null> {
  const pin = request.headers.get("x-route-pin");
  const token = request.headers.get("x-switchyard-admin-token");
  if (!pin || !token || !adminToken) return null;
  return (await secretEquals(token, adminToken)) ? pin.trim() : null;
}
