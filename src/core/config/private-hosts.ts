/**
 * Whether a configured upstream lives on a private network, which decides the default of
 * `routing.public_view`: an internal address is not something to show to anyone who asks.
 *
 * Private: loopback (127.0.0.0/8, ::1, `localhost`, `*.localhost`), RFC 1918
 * (10/8, 172.16/12, 192.168/16), link-local (169.254/16, fe80::/10), shared address
 * space (100.64/10), 0.0.0.0/8 and ::, IPv6 unique local (fc00::/7) and site-local
 * (fec0::/10), IPv4-mapped IPv6 of any of those, hosts under `.internal`, `.local`,
 * `.localhost` or `.home.arpa`, and single-label hosts (`http://vllm:8000`: only a
 * private resolver can answer for those).
 */

const PRIVATE_SUFFIXES = [".internal", ".local", ".localhost", ".home.arpa"];

/** True when `url`'s host is private (see above). A URL that does not parse counts as private: nothing is shown by mistake. */
export function isPrivateUrl(url: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(url).hostname.toLowerCase();
  } catch {
    return true;
  }
  if (hostname.startsWith("[")) return isPrivateIPv6(hostname.slice(1, -1));
  const host = hostname.replace(/\.$/, "");
  const v4 = parseIPv4(host);
  if (v4) return isPrivateIPv4(v4);
  if (!host.includes(".")) return true; // single label, localhost included
  return PRIVATE_SUFFIXES.some((suffix) => host.endsWith(suffix));
}

/** The WHATWG URL parser has already turned decimal, octal and hex forms into a dotted quad. */
function parseIPv4(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return null;
  return parts.map(Number);
}

function isPrivateIPv4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168)
  );
}

function isPrivateIPv6(address: string): boolean {
  const groups = expandIPv6(address);
  if (!groups) return true;
  if (groups.every((g) => g === 0)) return true; // ::
  if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return true; // ::1
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return isPrivateIPv4([groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff]); // ::ffff:a.b.c.d
  }
  const first = groups[0]!;
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xffc0) === 0xfec0;
}

/** Eight 16-bit groups of an IPv6 address as the URL parser writes it (compressed hex, no embedded IPv4). */
function expandIPv6(address: string): number[] | null {
  const halves = address.split("::");
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return null;
  const groups = [...head, ...Array<number>(halves.length === 2 ? fill : 0).fill(0), ...tail];
  return groups.some(Number.isNaN) ? null : groups;
}
