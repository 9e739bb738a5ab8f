import type { ConfigSnapshot } from "../config-source";
import { bearerToken, digestMatchesAny, rememberedDigest, secretEquals } from "../../lib/crypto";
import type { ClientCredential } from "./route";

const BEARER: ClientCredential = { read: bearerToken, hint: "`Authorization: Bearer <key>`" };

/** Anthropic's clients send their key as `x-api-key`; a bearer token is taken too, and wins when both come. */
export const X_API_KEY_OR_BEARER: ClientCredential = {
  read: (request) => bearerToken(request) ?? (request.headers.get("x-api-key")?.trim() || undefined),
  hint: "`x-api-key: <key>` or `Authorization: Bearer <key>`",
};

/**
 * Why a request may not pass the client-key check, or null when it may (always, when no
 * client keys are configured). Each surface words the 401 in its own shape.
 */
export async function clientKeyProblem(request: Request, snapshot: ConfigSnapshot, credential: ClientCredential = BEARER): Promise<string | null> {
  if (snapshot.clientKeyDigests.length === 0) return null;
  const token = credential.read(request);
  if (!token) return `Missing API key: send ${credential.hint}`;
  return digestMatchesAny((await rememberedDigest(token)).bytes, snapshot.clientKeyDigests) ? null : "Invalid API key";
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
