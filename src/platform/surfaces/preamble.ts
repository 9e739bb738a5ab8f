import type { Env } from "../env";
import { readBounded } from "./body";
import { adminProblem, clientKeyCheck } from "./client-auth";
import type { Principal } from "../../core/limits/principal";
import { TENANT_HEADER } from "../../core/limits/principal";
import { noConfigMessage } from "./no-config";
import type { AppDeps, Call, SurfaceRoute } from "./route";

const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard"' };

export type Opened = { ok: true; call: Call } | { ok: false; response: Response };

/**
 * What every route does before its handler, in one order, as its declaration says:
 *  1. the admin token, for admin routes (401; 404 while ADMIN_TOKEN is unset, so an
 *     unconfigured deployment shows no admin surface, config or not; admin pages are
 *     only that 404);
 *  2. the config (503 when the route needs one and none is serving);
 *  3. the client key, or for `/routing` the credential its config asks for (401);
 *  4. the body within its limit (413; 400 when it cannot be read);
 *  5. the path's parameters, percent-decoded, and the rest of the path (400 when any of
 *     it is malformed percent-encoding): after the credential, so a client without one
 *     learns nothing about the path.
 * Each refusal is worded in the route's error style, so no route can skip a step or
 * answer in another's shape.
 */
export async function openRoute(route: SurfaceRoute, rawParams: readonly string[], path: string, request: Request, env: Env, ctx: ExecutionContext, deps: AppDeps, startedAt: number): Promise<Opened> {
  const { errors } = route.group;
  const refuse = (status: number, message: string, code: string, headers: Record<string, string> = {}, param?: string): Opened => ({ ok: false, response: errors.reply(status, message, code, headers, param) });
  const adminRefusal = async (): Promise<Opened | null> => {
    const problem = await adminProblem(request, env.ADMIN_TOKEN);
    if (!problem) return null;
    return problem.status === 404 ? refuse(404, problem.message, "not_found") : refuse(401, problem.message, "invalid_api_key", CHALLENGE);
  };

  let admin = false;
  if (route.auth === "admin_page" && (typeof env.ADMIN_TOKEN !== "string" || env.ADMIN_TOKEN === "")) return refuse(404, "Not found", "not_found");
  if (route.auth === "admin") {
    const refused = await adminRefusal();
    if (refused) return refused;
    admin = true;
  }

  const state = route.config === "none" ? null : (deps.configSource.fresh(env) ?? (await deps.configSource.get(env)));
  const snapshot = state?.current ?? null;
  if (route.config === "required" && !snapshot) return refuse(503, noConfigMessage(state!), "no_config");

  // Without a config, /routing is open: it says why nothing serves, and holds no upstream to hide.
  // The admin token always opens the whole view; with public_view, a client gets the public one.
  if (route.auth === "public_view" && snapshot !== null) admin = (await adminProblem(request, env.ADMIN_TOKEN)) === null;
  const auth = route.auth === "public_view" ? (snapshot === null || admin ? "public" : snapshot.config.routing.public_view ? "client" : "admin") : route.auth;
  let principal: Principal | undefined;
  if (auth === "client" && snapshot && snapshot.clientKeyDigests.length > 0) {
    const check = await clientKeyCheck(request, snapshot, route.group.credential);
    if ("problem" in check) return check.status === 401 ? refuse(401, check.problem, "invalid_api_key", CHALLENGE) : refuse(400, check.problem, "invalid_tenant", {}, TENANT_HEADER);
    principal = check.principal;
  }
  if (auth === "admin" && route.auth === "public_view") {
    const refused = await adminRefusal();
    if (refused) return refused;
  }

  let body: Uint8Array = new Uint8Array();
  if (route.body !== "none") {
    const read = route.body === "max_body_bytes" ? await readBounded(request, snapshot!.config.routing.max_body_bytes) : await readBounded(request, route.body.maxBytes, route.body.tooLarge);
    if (!read.ok) return refuse(read.problem.status, read.problem.message, read.problem.code);
    body = read.bytes;
  }

  const params: Record<string, string> = {};
  if (typeof route.path !== "string") {
    for (const [i, param] of route.path.params.entries()) {
      const value = decodeSegment(rawParams[i] ?? "");
      if (value === null || value === "") return refuse(400, `${param.what} in the path is not valid percent-encoding`, "invalid_path");
      params[param.name] = value;
    }
    // A graph's subpath is passed on as it came: it too must be well-formed.
    if (!wellEncoded(path)) return refuse(400, MALFORMED_PATH, "invalid_path");
  }

  return { ok: true, call: { request, env, ctx, deps, errors, state, snapshot, body, params, startedAt, admin, principal } as Call };
}

export const MALFORMED_PATH = "the path is not valid percent-encoding";

/** False when some `%` in the path is not followed by two hex digits, or the bytes they spell are not UTF-8. */
export function wellEncoded(path: string): boolean {
  return !path.includes("%") || decodeSegment(path) !== null;
}

/** A path segment decoded, or null when its percent-encoding is malformed. */
function decodeSegment(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}
