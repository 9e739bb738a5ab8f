import { fromHex, sha256 } from "../../lib/crypto";

/**
 * Client key digests from config entries: `sha256:<hex>` is taken as is; anything else
 * is a resolved `${VAR}` secret (the loader refuses raw keys) and is hashed here.
 */
export async function clientKeyDigests(entries: readonly string[]): Promise<Uint8Array[]> {
  return Promise.all(entries.map((entry) => (entry.startsWith("sha256:") ? Promise.resolve(fromHex(entry.slice(7))) : sha256(entry))));
}
