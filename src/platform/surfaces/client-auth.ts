import type { ConfigSnapshot } from "../config-source";
import { bearerToken, digestMatchesAny, secretEquals, sha256 } from "../../lib/crypto";
import { notFound, unauthorized } from "./openai-error";

/**
 * Why a request may not pass the client-key check, or null when it may (always, when no
 * client keys are configured). Each surface words the 401 in its own shape.
 */
export async function clientKeyProblem(request: Request, snapshot: ConfigSnapshot): Promise<string | null> {
  if (snapshot.clientKeyDigests.length === 0) return null;
  const token = bearerToken(request);
  if (!token) return "Missing API key: send `Authorization: Bearer <key>`";
  return digestMatchesAny(await sha256(token), snapshot.clientKeyDigests) ? null : "Invalid API key";
}

/** The OpenAI surface's 401 for `clientKeyProblem`, or null when the request may pass. */
export async function requireClientKey(request: Request, snapshot: ConfigSnapshot): Promise<Response | null> {
  const problem = await clientKeyProblem(request, snapshot);
  return problem === null ? null : unauthorized(problem);
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

/** The OpenAI surface's answer to `adminProblem`, or null when the request may pass. */
export async function requireAdmin(request: Request, adminToken: unknown): Promise<Response | null> {
  const problem = await adminProblem(request, adminToken);
  if (problem === null) return null;
  return problem.status === 404 ? notFound(problem.message) : unauthorized(problem.message);
}
