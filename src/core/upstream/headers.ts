/**
 * What crosses the router, in both directions. One policy for pools and graph steps:
 * hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection; the router's own
 * credentials and control headers belong to the router; headers that ask a server or a
 * proxy on the way to treat the request as another method, path or host would let a
 * client steer past what the config names. None of them is forwarded. Where the router
 * sends its own key, the client's choice of provider account is not forwarded either;
 * a provider's naming of that account is never passed back.
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

/** Never forwarded upstream, whatever a graph's propagation patterns say. */
const NEVER_FORWARDED = new Set([
  "host",
  "content-length", // the runtime sets it for the body actually sent
  "cookie", // the client's session with whoever set it, not with the model server
  "x-route-pin",
  "x-slo-ttft-ms", // the router's objectives, met by picking; not the model server's business
  "x-slo-tpot-ms",
  "x-admin-token",
  // Overrides some servers and proxies honour: another method, path or host than the one sent.
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-url",
  "x-rewrite-url",
  "x-original-uri",
  "x-forwarded-uri",
  "x-forwarded-path",
  "x-forwarded-prefix",
  "x-envoy-original-path",
  "x-forwarded-host",
  "x-original-host",
  "x-host",
  "x-forwarded-server",
  "forwarded", // RFC 7239: its host= and proto= are X-Forwarded-Host's and -Proto's standard form
]);

/** The client's credentials (for the router, or Azure OpenAI's `api-key`): pools never forward them (a replica gets its own `api_key`). */
const CLIENT_CREDENTIALS = new Set(["authorization", "x-api-key", "api-key"]);

/**
 * Upstream answer headers that speak to the router's origin, not to the upstream's: a
 * cookie an upstream sets would live on the router's origin (where /dashboard is served),
 * and the client's own Cookie is never forwarded; an upstream's 401 challenge is for the
 * operator's key, while the client answers only the router's own challenges. Likewise
 * what a browser applies to the whole origin: wiping its storage, pinning HTTPS or
 * another service, framing and script policy, a refresh or preload elsewhere, and CORS,
 * which the router does not grant (it answers no preflight).
 */
const ORIGIN_BOUND = new Set([
  "set-cookie",
  "www-authenticate",
  "clear-site-data",
  "alt-svc",
  "strict-transport-security",
  "refresh",
  "link",
  "location",
  "content-location",
  "content-security-policy",
  "content-security-policy-report-only",
  "x-frame-options",
  "service-worker-allowed",
  "permissions-policy",
  "cross-origin-opener-policy",
  "cross-origin-embedder-policy",
  "cross-origin-resource-policy",
  "origin-agent-cluster",
  "report-to",
  "reporting-endpoints",
  "nel",
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "access-control-allow-headers",
  "access-control-allow-methods",
  "access-control-expose-headers",
  "access-control-max-age",
  "set-login",
  "activate-storage-access",
  "observe-browsing-topics",
  "attribution-reporting-register-source",
  "attribution-reporting-register-trigger",
  "accept-ch",
  "critical-ch",
  "feature-policy",
  "cross-origin-opener-policy-report-only",
  "cross-origin-embedder-policy-report-only",
  "permissions-policy-report-only",
  "document-policy",
  "origin-trial",
  "sec-session-registration",
]);

/**
 * Headers that choose which account, organization or project a provider bills. A client
 * must not choose them for the operator's credential: not sent where the router sends
 * its own key (`withOperatorKey`).
 */
const ACCOUNT_SELECTORS = new Set([
  "openai-organization",
  "openai-project",
  "x-goog-user-project", // Google's quota and billing project
]);

/**
 * Headers by which a provider names the account that served (and was billed for) a
 * request: the operator's, never the client's business. Not passed back to clients.
 * Timing and request ids (`openai-processing-ms`, `x-request-id`) pass: they name no account.
 */
const ACCOUNT_IDENTIFIERS = new Set(["openai-organization", "openai-project", "anthropic-organization-id"]);

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

const routerOwned = (name: string): boolean => NEVER_FORWARDED.has(name) || name.startsWith("x-switchyard-") || name.startsWith("cf-");

export interface ForwardOptions {
  /** Keep only names this accepts (graph propagation patterns); default: every name. */
  select?: (name: string) => boolean;
  /** Let Authorization / X-Api-Key through when selected (graphs, when they are not the router's client key). */
  keepCredentials?: boolean;
  /** The router re-encoded the body it sends: the client's Content-Encoding no longer describes it. */
  bodyRewritten?: boolean;
  /** Content-Type to send whatever the client said (the OpenAI surface has parsed the body as JSON). */
  contentType?: string;
}

/** The request headers that may go upstream, with JSON as the default content type. */
export function upstreamRequestHeaders(incoming: Headers, options: ForwardOptions = {}): Headers {
  const listed = connectionListed(incoming);
  const out = new Headers(incoming); // one native copy; the exclusions are deleted after
  for (const name of incoming.keys()) {
    const drop =
      HOP_BY_HOP.has(name) ||
      routerOwned(name) ||
      listed?.has(name) === true ||
      (CLIENT_CREDENTIALS.has(name) && !options.keepCredentials) ||
      (name === "content-encoding" && options.bodyRewritten === true) ||
      (options.select !== undefined && !options.select(name));
    if (drop) out.delete(name);
  }
  if (options.contentType) out.set("content-type", options.contentType);
  else if (!out.has("content-type")) out.set("content-type", "application/json");
  return out;
}

/** The upstream's response headers minus what belongs to one connection, to the router's origin, or to the account that served it. */
export function clientResponseHeaders(upstream: Headers): Headers {
  const listed = connectionListed(upstream);
  const out = new Headers(upstream); // one native copy; the few exclusions are deleted after
  for (const name of upstream.keys()) {
    // only the router speaks for itself
    if (HOP_BY_HOP.has(name) || name === "content-length" || name.startsWith("x-switchyard-") || ACCOUNT_IDENTIFIERS.has(name) || ORIGIN_BOUND.has(name) || listed?.has(name)) out.delete(name);
  }
  return out;
}

export const ANTHROPIC_VERSION = "2023-06-01"; // the Messages API's version header; a client's own value is kept

/**
 * Headers for a try to an Anthropic-native upstream: the operator's key, when the config
 * gives one, as `x-api-key` (and no bearer token), and an `anthropic-version` when the
 * client sent none (a chat client translated to Messages never does).
 */
export function anthropicHeaders(headers: Headers, apiKey: string | undefined): Headers {
  const out = new Headers(headers);
  if (apiKey) {
    out.set("x-api-key", apiKey);
    out.delete("authorization");
    for (const name of ACCOUNT_SELECTORS) out.delete(name);
  }
  if (!out.has("anthropic-version")) out.set("anthropic-version", ANTHROPIC_VERSION);
  return out;
}

/** Headers for a try sent with the operator's key (a replica's or route's `api_key`): that key, and no client choice of account. */
export function withOperatorKey(headers: Headers, apiKey: string): Headers {
  const keyed = new Headers(headers);
  keyed.set("authorization", `Bearer ${apiKey}`);
  for (const name of ACCOUNT_SELECTORS) keyed.delete(name);
  return keyed;
}
