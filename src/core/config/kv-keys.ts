/**
 * KV layout of the live config. Blobs are immutable, so they can be cached at the edge
 * for a long time; only the small pointer key is re-read on refresh.
 *
 *   config/current          -> "<version id>"            (rewritten on every publish)
 *   config/versions/<id>    -> the config documents      (../config/blob.ts; never rewritten)
 */
export const CONFIG_POINTER_KEY = "config/current";
export const configBlobKey = (version: string): string => `config/versions/${version}`;

/**
 * A version id is the publish time (to the millisecond) plus a content hash: ids sort
 * by publish time, which the pool objects rely on to keep only the newest spec during a
 * rollout, and two different documents never share one.
 */
export async function configVersionId(text: string, now: Date = new Date()): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const hash = [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const stamp = now.toISOString().replace(/[-:.]/g, ""); // 20261122T131500123Z
  return `${stamp}-${hash}`;
}
