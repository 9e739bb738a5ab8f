import type { ConfigSnapshot } from "../config-source";
import { bearerToken, digestMatchesAny, rememberedDigest, secretEquals } from "../../lib/crypto";

/**
 * Why a request may not pass the client-key check, or null when it may (always, when no
 * client keys are configured). Each surface words the 401 in its own shape.
 */
export async function clientKeyProblem(request: Request, snapshot: ConfigSnapshot): Promise<string | null> {
  if (snapshot.clientKeyDigests.length === 0) return null;
  const token = bearerToken(request);
  if (!token) return "Missing API key: send `Authorization: Bearer <key>`";
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
