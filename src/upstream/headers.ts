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

const ROUTER_OWNED_PREFIXES = ["x-switchyard-", "cf-"];

function connectionListed(headers: Headers): Set<string> {
  const listed = new Set<string>();
  for (const token of (headers.get("connection") ?? "").split(",")) {
    const name = token.trim().toLowerCase();
    if (name) listed.add(name);
  }
  return listed;
}

export function upstreamRequestHeaders(incoming: Headers, apiKey: string | undefined): Headers {
  const listed = connectionListed(incoming);
  const out = new Headers();
  for (const [name, value] of incoming) {
    if (HOP_BY_HOP.has(name) || listed.has(name) || ROUTER_OWNED.has(name)) continue;
    if (ROUTER_OWNED_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    out.set(name, value);
  }
  out.set("content-type", "application/json");
  if (apiKey) out.set("authorization", `Bearer ${apiKey}`);
  return out;
}

export function clientResponseHeaders(upstream: Headers): Headers {
  const listed = connectionListed(upstream);
  const out = new Headers();
  for (const [name, value] of upstream) {
    if (HOP_BY_HOP.has(name) || listed.has(name) || name === "content-length") continue;
    if (name.startsWith("x-switchyard-")) continue; // only the router speaks for itself
    out.append(name, value);
  }
  return out;
}
