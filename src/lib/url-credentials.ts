/**
 * A configured URL's userinfo (`http://user:password@host`) as HTTP Basic credentials.
 * The Workers runtime's fetch drops userinfo without a word, so a server behind Basic
 * auth would be called unauthenticated; curl, Prometheus and the OTLP exporters send it
 * as `Authorization: Basic`, and so does the router. Null, after one `indexOf`, for the
 * usual URL without any, so a model call pays nothing for this.
 */
export function urlCredentials(url: string): { url: string; authorization: string } | null {
  const scheme = url.indexOf("://");
  if (scheme < 0) return null;
  const at = url.indexOf("@", scheme + 3);
  if (at < 0) return null;
  const slash = url.indexOf("/", scheme + 3);
  if (slash >= 0 && slash < at) return null; // an "@" in the path, not userinfo
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.username === "" && parsed.password === "") return null;
  const pair = `${decoded(parsed.username)}:${decoded(parsed.password)}`;
  parsed.username = "";
  parsed.password = "";
  return { url: parsed.toString(), authorization: `Basic ${base64(new TextEncoder().encode(pair))}` };
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part; // a stray "%" is the character itself
  }
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}
