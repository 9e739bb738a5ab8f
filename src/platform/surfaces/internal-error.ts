import { REDACTED, Redactions, SHORT_VALUE_CHARS } from "../../core/config/redact";
import { bearerToken } from "../../lib/crypto";
import type { ConfigSnapshot } from "../config-source";
import type { Env } from "../env";
import type { SurfaceRoute } from "./route";
import { routeName } from "./route";
import type { Trace } from "../../app/telemetry/trace";

const CREDENTIAL_HEADERS = ["authorization", "x-api-key", "x-switchyard-admin-token"];

/**
 * A handler threw: 500 in the route's own shape, and one log line naming the route and
 * the error. An error's message may quote anything it touched, so every secret the
 * router can know is scrubbed from it first: the config's (its redactions), the
 * request's credentials, ADMIN_TOKEN, and every other string in the env long enough to
 * be replaced safely.
 */
export function internalError(route: SurfaceRoute, error: unknown, request: Request, env: Env, snapshot: ConfigSnapshot | null, trace?: Trace): Response {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  console.error(JSON.stringify({ event: "unhandled_error", route: routeName(route), message: scrubbed(text, request, env, snapshot), ...trace?.logFields() }));
  return route.group.errors.reply(500, "Internal router error", "internal_error");
}

function scrubbed(text: string, request: Request, env: Env, snapshot: ConfigSnapshot | null): string {
  const secrets: string[] = [];
  for (const name of CREDENTIAL_HEADERS) {
    const value = request.headers.get(name);
    if (value) secrets.push(value.trim());
  }
  const bearer = bearerToken(request);
  if (bearer) secrets.push(bearer);
  if (typeof env.ADMIN_TOKEN === "string") secrets.push(env.ADMIN_TOKEN);
  for (const value of Object.values(env)) if (typeof value === "string" && value.length >= SHORT_VALUE_CHARS) secrets.push(value);
  const known = snapshot ? snapshot.redactions.text(text) : text;
  return new Redactions(secrets.map((s) => [s, REDACTED])).text(known);
}
