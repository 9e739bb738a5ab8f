import { sha256, toHex } from "../../lib/crypto";

/** The one tenant of requests that carry no client address (a local `switchyard serve`, a test). */
export const ANONYMOUS_TENANT = "anonymous";

/**
 * Whose line a waiting request joins in a pool's fair queue. With client keys configured
 * every request got here with a valid key, so the key (its SHA-256, never the key) is
 * the principal. Without keys a bearer proves nothing — a client could invent one per
 * request and be a new tenant each time — so the tenant is the client address Cloudflare
 * sets (`CF-Connecting-IP`), and requests without one share one anonymous tenant.
 */
export async function queueTenant(request: Request, bearer: string | undefined, keysRequired: boolean): Promise<string> {
  if (keysRequired && bearer) return `key:${toHex(await sha256(bearer))}`;
  const address = request.headers.get("cf-connecting-ip");
  return address ? `ip:${address}` : ANONYMOUS_TENANT;
}
