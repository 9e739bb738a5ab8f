import type { ConfigSnapshot } from "../config-source";
import { bearerToken, digestIndex, rememberedDigest, secretEquals } from "../../lib/crypto";
import type { Principal } from "../../core/limits/principal";
import { TENANT_HEADER, withTenant } from "../../core/limits/principal";
import type { ClientCredential } from "./route";

const BEARER: ClientCredential = { read: bearerToken, hint: "`Authorization: Bearer <key>`" };

/** Anthropic's clients send their key as `x-api-key`; a bearer token is taken too, and wins when both come. */
export const X_API_KEY_OR_BEARER: ClientCredential = {
  read: (request) => bearerToken(request) ?? (request.headers.get("x-api-key")?.trim() || undefined),
  hint: "`x-api-key: <key>` or `Authorization: Bearer <key>`",
};

/**
 * Why a request may not pass the client-key check, or the principal its key names (none
 * when no client keys are configured). Each surface words the 401 in its own shape.
 */
export async function clientKeyCheck(request: Request, snapshot: ConfigSnapshot, credential: ClientCredential = BEARER): Promise<{ problem: string; status: 400 | 401 } | { principal: Principal | undefined }> {
  if (snapshot.clientKeyDigests.length === 0) return { principal: undefined };
  const token = credential.read(request);
  if (!token) return { problem: `Missing API key: send ${credential.hint}`, status: 401 };
  const index = digestIndex((await rememberedDigest(token)).bytes, snapshot.clientKeyDigests);
  const key = snapshot.keyPrincipals[index];
  if (!key) return { problem: "Invalid API key", status: 401 };
  const principal = withTenant(key, request.headers.get(TENANT_HEADER));
  return "problem" in principal ? { problem: principal.problem, status: 400 } : { principal };
}

/**
 * Admin endpoints need the ADMIN_TOKEN secret as a bearer token. Without the secret
 * they do not exist (404), so an unconfigured deployment exposes no admin surface.
 */
export async function adminProblem(request: Request, adminToken: unknown): Promise<{ status: 401 | 404; message: string } | null> {
  if (typeof adminToken !== "string" || adminToken === "") return { status: 404, message: "Not found" };
  const token = bearerToken(request);
  if (!token) return { status: 401, message: "Admin endpoints need `Authorization: Bearer <ADMIN_TOKEN>`" };
  return (await secretEquals(token, adminToken)) ? null : { status: 401, message: "Invalid admin token" };
}
