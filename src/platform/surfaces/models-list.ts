import { json } from "./json-response";
import type { Call } from "./route";

/** `GET /v1/models` in OpenAI's list shape: every model the serving config routes. */
export function listModels(call: Call<"required">): Response {
  const { snapshot } = call;
  const created = Math.floor(snapshot.loadedAt / 1000);
  const data = [...snapshot.routes.keys(), ...snapshot.routewise.keys(), ...snapshot.graphModels.keys()].map((id) => ({ id, object: "model", created, owned_by: "switchyard" }));
  return json({ object: "list", data });
}
