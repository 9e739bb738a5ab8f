import type { Env } from "../env";
import type { ConfigSnapshot, ConfigSource } from "../config-source";
import { readBounded } from "./body";
import { adminProblem, clientKeyProblem } from "./client-auth";
import type { ErrorStyle } from "./error-style";
import { noConfigMessage } from "./no-config";

const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard"' };

export interface PreambleOptions {
  /** "client": the config's client keys (none configured = open); "admin": the ADMIN_TOKEN secret. */
  auth: "client" | "admin";
  /** Read the body, bounded by routing.max_body_bytes (or `bodyLimit`). */
  body: boolean;
  bodyLimit?: number;
}

export type Opened = { ok: true; snapshot: ConfigSnapshot; body: Uint8Array } | { ok: false; response: Response };

/**
 * What every surface does before its own work, in one order: the config (503 without
 * one), the credential (401, or 404 for admin paths while ADMIN_TOKEN is unset), the body
 * within its limit (413; 400 when it cannot be read). Each refusal is worded in the
 * surface's error style, so no surface can skip a step or answer in another's shape.
 */
export async function openRequest(request: Request, env: Env, configSource: ConfigSource, errors: ErrorStyle, options: PreambleOptions): Promise<Opened> {
  if (options.auth === "admin") {
    const problem = await adminProblem(request, env.ADMIN_TOKEN);
    if (problem) return { ok: false, response: errors.reply(problem.status, problem.message, problem.status === 404 ? "not_found" : "invalid_api_key", problem.status === 401 ? CHALLENGE : {}) };
  }
  const state = configSource.fresh(env) ?? (await configSource.get(env));
  const snapshot = state.current;
  if (!snapshot) return { ok: false, response: errors.reply(503, noConfigMessage(state), "no_config") };
  if (options.auth === "client" && snapshot.clientKeyDigests.length > 0) {
    const problem = await clientKeyProblem(request, snapshot);
    if (problem) return { ok: false, response: errors.reply(401, problem, "invalid_api_key", CHALLENGE) };
  }
  if (!options.body) return { ok: true, snapshot, body: new Uint8Array() };
  const body = await readBounded(request, options.bodyLimit ?? snapshot.config.routing.max_body_bytes);
  if (!body.ok) return { ok: false, response: errors.reply(body.problem.status, body.problem.message, body.problem.code) };
  return { ok: true, snapshot, body: body.bytes };
}

/** A path segment decoded, or null when its percent-encoding is malformed (the caller answers 400). */
export function decodeSegment(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}
