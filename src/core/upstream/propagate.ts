import { upstreamRequestHeaders } from "./headers";

/**
 * KServe's PROPAGATE_HEADERS: request headers whose canonical name (Go's
 * CanonicalMIMEHeaderKey, "X-B3-Traceid") matches a pattern are forwarded to every step.
 * Unlike KServe, a pattern must match the whole name (`Authorization` does not match
 * `Proxy-Authorization`; write `X-B3-.*` for a prefix). Patterns are compiled at config
 * load, so an invalid one is a config error instead of a silently skipped rule.
 */
export function compileHeaderPatterns(patterns: readonly string[]): { ok: true; regexes: RegExp[] } | { ok: false; index: number; message: string } {
  const regexes: RegExp[] = [];
  for (const [index, pattern] of patterns.entries()) {
    try {
      regexes.push(new RegExp(`^(?:${pattern})$`));
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
 * Upstream headers for graph steps: the propagated ones, filtered by the same policy as
 * a pool's requests (src/core/upstream/headers.ts: no hop-by-hop, cookies, router control or
 * override headers). Credentials (Authorization, X-Api-Key) pass only when a pattern
 * asks and they are not the router's own client key.
 */
export function stepHeaders(incoming: Headers, patterns: readonly RegExp[], routerOwnsAuthorization: boolean): Headers {
  return upstreamRequestHeaders(incoming, {
    select: (name) => {
      const canonical = canonicalHeaderName(name);
      return patterns.some((p) => p.test(canonical));
    },
    keepCredentials: !routerOwnsAuthorization,
  });
}
