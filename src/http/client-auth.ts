import type { ConfigSnapshot } from "../kv/config-source";
import { bearerToken, digestMatchesAny, secretEquals, sha256 } from "./auth";
import { notFound, unauthorized } from "./openai-error";

/** Null when the request may pass; otherwise the 401 to send. Open when no client keys are configured. */
export async function requireClientKey(request: Request, snapshot: ConfigSnapshot): Promise<Response | null> {
  if (snapshot.clientKeyDigests.length === 0) return null;
  const token = bearerToken(request);
  if (!token) return unauthorized("Missing API key: send `Authorization: Bearer <key>`");
  return digestMatchesAny(await sha256(token), snapshot.clientKeyDigests) ? null : unauthorized("Invalid API key");
}

/**
 * Admin endpoints need the ADMIN_TOKEN secret as a bearer token. Without the secret
 * they do not exist (404), so an unconfigured deployment exposes no admin surface.
 */
export async function requireAdmin(request: Request, adminToken: unknown): Promise<Response | null> {
  if (typeof adminToken !== "string" || adminToken === "") return notFound("Not found");
  const token = bearerToken(request);
  if (!token) return unauthorized("Admin endpoints need `Authorization: Bearer <ADMIN_TOKEN>`");
  return (await secretEquals(token, adminToken)) ? null : unauthorized("Invalid admin token");
}
