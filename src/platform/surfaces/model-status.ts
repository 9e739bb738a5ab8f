/**
 * What model-serving clients ask before they infer: OpenAI's `models.retrieve`, and
 * KServe's (Open Inference Protocol's) liveness, readiness and model readiness. Each is
 * answered by the router from the config it serves; no upstream is called.
 */
import { modelTarget } from "../../core/targets/model-target";
import { json } from "./json-response";
import type { Call } from "./route";

const SERVER_NAME = "switchyard";
const SERVER_VERSION = "0.1.0"; // package.json's

const missing = (call: Call<"required">, model: string): Response =>
  call.errors.reply(404, `The model '${model}' does not exist or you do not have access to it`, "model_not_found", {}, "model");

/**
 * `GET /v1/models/<model>`: OpenAI's Model object for its SDK's `models.retrieve`, with
 * KServe v1's `{name, ready}` model status in the same body, as both clients ask at this path.
 */
export function retrieveModel(call: Call<"required">): Response {
  const model = call.params.model!;
  if (!modelTarget(call.snapshot, model)) return missing(call, model);
  return json({ id: model, object: "model", created: Math.floor(call.snapshot.loadedAt / 1000), owned_by: SERVER_NAME, name: model, ready: true });
}

/** `GET /v2/models/<model>/ready`: 200 `{name, ready: true}` for a model the config routes. */
export function modelReady(call: Call<"required">): Response {
  const model = call.params.model!;
  if (!modelTarget(call.snapshot, model)) return missing(call, model);
  return json({ name: model, ready: true });
}

/** `GET /v2/health/live`: the router answers. */
export function serverLive(): Response {
  return json({ live: true });
}

/** `GET /v2/health/ready`: ready while a valid config serves, 503 before. */
export function serverReady(call: Call<"optional">): Response {
  return call.snapshot ? json({ ready: true }) : json({ ready: false }, 503);
}

/** `GET /v2`: the Open Inference Protocol's server metadata. */
export function serverMetadata(): Response {
  return json({ name: SERVER_NAME, version: SERVER_VERSION, extensions: [] });
}
