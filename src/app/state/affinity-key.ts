import { rememberedDigest } from "../../lib/crypto";

export const AFFINITY_SHARDS = 16; // ~500 pin lookups/s each before a shard nears a Durable Object's ~1,000 req/s; changing it remaps (and so resets) pins

/**
 * Whose session a request belongs to: the SHA-256 of its bearer credential whenever it
 * has one (never the raw key, whether or not the router checks client keys), else the
 * client address.
 */
export async function affinityKey(request: Request, bearer: string | undefined): Promise<string> {
  if (bearer) return (await rememberedDigest(bearer)).hex;
  const address = request.headers.get("cf-connecting-ip") ?? request.headers.get("x-real-ip") ?? "unknown";
  return `ip:${address}`;
}

/** Shard by the key's hash, so one client's pins for all models live in one object. */
export async function shardOf(key: string): Promise<number> {
  const digest = key.startsWith("ip:") ? (await rememberedDigest(key)).bytes : hexPrefix(key);
  const word = ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
  return word % AFFINITY_SHARDS;
}

function hexPrefix(hex: string): Uint8Array {
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}
