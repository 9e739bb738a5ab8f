/**
 * What crosses the proxy. Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection,
 * and the router's own credentials and control headers belong to the router: neither
 * is forwarded.
 */

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

const ROUTER_OWNED = new Set([
  "host",
  "content-length", // the runtime sets it for the body we actually send
  "authorization", // the client's key for the router, never the upstream's
  "cookie",
  "x-route-pin",
  "x-admin-token",
]);

/** Names a `Connection` header lists, or null when there is none (the common case: no Set built). */
function connectionListed(headers: Headers): Set<string> | null {
  const connection = headers.get("connection");
  if (connection === null) return null;
  const listed = new Set<string>();
  for (const token of connection.split(",")) {
    const name = token.trim().toLowerCase();
    if (name) listed.add(name);
  }
  return listed;
}

const routerOwned = (name: string): boolean => ROUTER_OWNED.has(name) || name.startsWith("x-switchyard-") || name.startsWith("cf-");

export function upstreamRequestHeaders(incoming: Headers, apiKey: string | undefined): Headers {
  const listed = connectionListed(incoming);
  const out = new Headers(incoming); // one native copy; the few exclusions are deleted after
  for (const name of incoming.keys()) {
    if (HOP_BY_HOP.has(name) || routerOwned(name) || listed?.has(name)) out.delete(name);
  }
  out.set("content-type", "application/json");
  if (apiKey) out.set("authorization", `Bearer ${apiKey}`);
  return out;
}

/** The upstream's response headers minus what belongs to one connection or to the router. */
export function clientResponseHeaders(upstream: Headers): Headers {
  const listed = connectionListed(upstream);
  const out = new Headers(upstream); // one native copy; the few exclusions are deleted after
  for (const name of upstream.keys()) {
    // only the router speaks for itself
    if (HOP_BY_HOP.has(name) || name === "content-length" || name.startsWith("x-switchyard-") || listed?.has(name)) out.delete(name);
  }
  return out;
}
