/**
 * Joins a replica's base URL and an API path. Bases are written either as the server
 * root (`http://10.0.0.5:8000`) or, as OpenAI-compatible providers document them, with
 * the version prefix (`https://api.example.com/v1`); both reach `.../v1/chat/completions`.
 * The path is one of the router's fixed endpoints, never taken from the request, so a
 * request cannot steer the router to a URL the config does not name.
 */
export function upstreamUrl(base: string, apiPath: string): string {
  const url = new URL(base);
  const basePath = url.pathname.replace(/\/+$/, "");
  const suffix = basePath.endsWith("/v1") && apiPath.startsWith("/v1/") ? apiPath.slice(3) : apiPath;
  url.pathname = `${basePath}${suffix}`;
  return url.toString();
}

const joined = new WeakMap<object, Map<string, string>>();

/**
 * `upstreamUrl` for a configured replica, worked out once per (replica, path): replicas
 * are fixed per config version and paths are the router's own endpoints, so parsing the
 * URL on every request would redo the same work.
 */
export function replicaUrl(replica: { url: string }, apiPath: string): string {
  let paths = joined.get(replica);
  if (!paths) joined.set(replica, (paths = new Map()));
  let url = paths.get(apiPath);
  if (url === undefined) paths.set(apiPath, (url = upstreamUrl(replica.url, apiPath)));
  return url;
}
