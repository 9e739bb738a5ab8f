/** Hostnames a model server can really have: DNS labels, IPv4, or a bracketed IPv6 literal. */
const HOSTNAME = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*)$/;

/**
 * An absolute http(s) URL with a real hostname. WHATWG's parser lets through hosts such
 * as `single-1.default.{$your-domain}` (a template never filled in), which Go's parser,
 * and so KServe, refuses; we refuse them at load.
 */
export function isHttpUrl(value: string, opts: { allowQuery?: boolean } = {}): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  if (!HOSTNAME.test(url.hostname)) return false;
  return opts.allowQuery === true || (url.search === "" && url.hash === "");
}
