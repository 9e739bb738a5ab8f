/**
 * Credential checks. Every comparison hashes both sides with SHA-256 first and then
 * compares digests with `timingSafeEqual`, so neither the content nor the length of a
 * secret leaks through timing.
 */

declare global {
  interface SubtleCrypto {
    timingSafeEqual(a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView): boolean;
  }
}

const encoder = new TextEncoder();

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

const REMEMBERED_DIGESTS_MAX = 1_000; // distinct credentials and addresses per isolate; a flood of new ones only pushes out the oldest

export interface Digest {
  bytes: Uint8Array;
  hex: string;
}

const remembered = new Map<string, Digest>();

/**
 * SHA-256 of what a client presents on every request (its bearer key, its address),
 * remembered per isolate, at most REMEMBERED_DIGESTS_MAX of them, oldest forgotten first:
 * the client-key check and the affinity key hash the same credential on each request, and
 * a digest per request showed in profiles. Held in the isolate's memory only, like the
 * request that carried it; a hit is quicker than a miss, which tells a client only that a
 * credential it already holds was used here before. The digest is shared: never mutate it.
 */
export function rememberedDigest(text: string): Digest | Promise<Digest> {
  const known = remembered.get(text);
  return known ?? remember(text);
}

async function remember(text: string): Promise<Digest> {
  const bytes = await sha256(text);
  const digest = { bytes, hex: toHex(bytes) };
  if (remembered.size >= REMEMBERED_DIGESTS_MAX) remembered.delete(remembered.keys().next().value!);
  remembered.set(text, digest);
  return digest;
}

/** How many digests this isolate remembers (for the test of its bound). */
export function rememberedDigestCount(): number {
  return remembered.size;
}

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

export function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** The bearer credential of a request, or undefined. */
export function bearerToken(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * True when the digest matches any allowed digest. Every entry is compared, with no
 * early exit, so the position of a match does not show in the timing either.
 */
export function digestMatchesAny(digest: Uint8Array, allowed: readonly Uint8Array[]): boolean {
  return digestIndex(digest, allowed) !== -1;
}

/**
 * The index of the allowed digest that matches, or -1: as digestMatchesAny, every entry is
 * compared with no early exit, so which entry matched does not show in the timing.
 */
export function digestIndex(digest: Uint8Array, allowed: readonly Uint8Array[]): number {
  let found = -1;
  for (let i = 0; i < allowed.length; i++) {
    if (crypto.subtle.timingSafeEqual(digest, allowed[i]!) && found === -1) found = i;
  }
  return found;
}

export async function secretEquals(presented: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([sha256(presented), sha256(expected)]);
  return crypto.subtle.timingSafeEqual(a, b);
}
