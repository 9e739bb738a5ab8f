/**
 * KServe's PROPAGATE_HEADERS: request headers whose canonical name (Go's
 * CanonicalMIMEHeaderKey, "X-B3-Traceid") matches any pattern, unanchored, are forwarded
 * to every step. Patterns are compiled at config load, so an invalid one is a config
 * error instead of a silently skipped rule.
 */
export function compileHeaderPatterns(patterns: readonly string[]): { ok: true; regexes: RegExp[] } | { ok: false; index: number; message: string } {
  const regexes: RegExp[] = [];
  for (const [index, pattern] of patterns.entries()) {
    try {
      regexes.push(new RegExp(pattern));
    } catch (error) {
      return { ok: false, index, message: (error as Error).message };
    }
  }
  return { ok: true, regexes };
}

export function canonicalHeaderName(name: string): string {
  return name
    .split("-")
    .map((part) => (part === "" ? part : part[0]!.toUpperCase() + part.slice(1).toLowerCase()))
    .join("-");
}

/**
 * Upstream headers for graph steps: propagated ones, and JSON unless Content-Type was
 * propagated. The router's own headers never go out, whatever the patterns say:
 * Authorization when it carries a client key for the router, and its control headers.
 */
export function stepHeaders(incoming: Headers, patterns: readonly RegExp[], routerOwnsAuthorization: boolean): Headers {
  const out = new Headers();
  for (const [name, value] of incoming) {
    if (name.startsWith("x-switchyard-") || name === "x-route-pin" || (routerOwnsAuthorization && name === "authorization")) continue;
    const canonical = canonicalHeaderName(name);
    if (patterns.some((p) => p.test(canonical))) out.set(name, value);
  }
  if (!out.has("content-type")) out.set("content-type", "application/json");
  return out;
}
