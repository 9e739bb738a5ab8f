import { json } from "./json-response";
import type { Call } from "./route";

/** `GET /health`: 200 while a valid config is serving, else 503 (a body either way). */
export function health(call: Call<"optional">): Response {
  if (!call.snapshot) return json({ status: "no_config" }, 503);
  return json({ status: "ok", config_version: call.snapshot.version });
}
