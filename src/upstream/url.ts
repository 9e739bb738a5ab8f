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
