/**
 * The one join rule for a configured base URL and a path the router chooses: model
 * calls (`/v1/chat/completions`, KServe's `/v2/models/<m>/infer`), health checks and
 * metrics scrapes. Bases are written either as the server root (`http://10.0.0.5:8000`,
 * or under a path prefix: `https://gw.example.com/team`) or, as OpenAI-compatible
 * providers document them, with the version prefix (`https://api.example.com/v1`). A
 * trailing `/v1` is the API's, not the server's: the server root is the base without it,
 * and every path is joined to that root, so both kinds of base reach
 * `.../v1/chat/completions` and `.../health`. Paths are the router's own, never taken from
 * a request, so a request cannot steer the router to a URL the config does not name.
 */
export function upstreamUrl(base: string, path: string): string {
  const url = new URL(base);
  const origin = url.origin;
  const basePath = url.pathname.replace(/\/+$/, "");
  const root = basePath.endsWith("/v1") ? basePath.slice(0, -3) : basePath;
  const problem = pathProblem(path);
  if (problem === null) url.pathname = `${root}${path}`;
  // Checked on the result too: whatever a parser makes of the path, the request stays under the configured base.
  if (problem !== null || url.origin !== origin || !url.pathname.startsWith(`${root}/`)) throw new StrayPathError(path);
  return url.toString();
}

/** A path the join refused; the message names the path, never the base (which may hold a secret). */
export class StrayPathError extends Error {
  constructor(path: string) {
    super(`the path ${JSON.stringify(path)} leaves the upstream's configured origin or path`);
  }
}

/**
 * Why `path` is not a plain path on a server's own origin, or null. A configured path
 * (health, metrics) is joined to a replica's URL, so it must not name another host
 * (`//host/...`, a backslash, which URL parsers read as a slash), climb out of the base's
 * path (`.` or `..` segments, percent-encoded too), or carry a query or fragment.
 */
export function pathProblem(path: string): string | null {
  if (!path.startsWith("/")) return "must start with /";
  if (path.startsWith("//") || path.includes("\\")) return "must not start with // or hold a backslash";
  if (/[?#]/.test(path)) return "must not hold a query or fragment";
  if (path.split("/").some((segment) => DOT_SEGMENT.test(segment))) return "must not hold . or .. segments";
  return null;
}

const DOT_SEGMENT = /^(\.|%2e){1,2}$/i;

const joined = new WeakMap<object, Map<string, string>>();

/**
 * `upstreamUrl` for a configured backend, worked out once per (backend, path): backends
 * are fixed per config version and paths are the router's own endpoints, so parsing the
 * URL on every request would redo the same work.
 */
export function replicaUrl(backend: { url: string }, path: string): string {
  let paths = joined.get(backend);
  if (!paths) joined.set(backend, (paths = new Map()));
  let url = paths.get(path);
  if (url === undefined) paths.set(path, (url = upstreamUrl(backend.url, path)));
  return url;
}
