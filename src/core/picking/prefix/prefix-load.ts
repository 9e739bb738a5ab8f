/**
 * Requests in flight per replica and prompt opening, as one isolate routes them: what share
 * of a replica's load one prefix is. A chained block hash names the whole prompt up to its
 * block, so the hash of block `blocks` − 1 names a prompt's opening (a tenant's system
 * prompt, say) and every request that shares it shares that key.
 *
 * The busy cap reads it to tell a hot prefix from a busy replica: a replica carrying many
 * requests of many prompts is just busy, while one carrying several of this very prompt
 * is the prompt outgrowing its home (pickers/busy-cap.ts, the idle rule).
 */
export class PrefixLoad {
  #counts = new Map<string, Map<number, number>>();

  /** One more (+1) or one fewer (−1) request of `key` in flight on `replica`; null keys are not counted. */
  add(replica: string, key: number | null, delta: 1 | -1): void {
    if (key === null) return;
    const byKey = this.#counts.get(replica) ?? new Map<number, number>();
    const next = (byKey.get(key) ?? 0) + delta;
    if (next > 0) byKey.set(key, next);
    else byKey.delete(key);
    if (byKey.size > 0) this.#counts.set(replica, byKey);
    else this.#counts.delete(replica);
  }

  of(replica: string, key: number | null): number {
    return key === null ? 0 : (this.#counts.get(replica)?.get(key) ?? 0);
  }
}

/** The key of a prompt's first `blocks` blocks (its opening), or null for a prompt without blocks. */
export function openingKey(hashes: readonly number[], blocks: number): number | null {
  if (hashes.length === 0) return null;
  return hashes[Math.min(hashes.length, Math.max(1, blocks)) - 1]!;
}
