import type { PrefixIndexReader } from "../prefix/prefix-index";
import type { Candidate } from "../scoring/types";

/**
 * The longest match among the candidates and who holds it: Ray's and SGLang's "tenants at
 * the deepest matched node". `best` is in blocks (0 when nothing matches; then `holders`
 * is empty).
 */
export function longestMatch(candidates: readonly Candidate[], matches: ReadonlyMap<string, number>): { best: number; holders: Candidate[] } {
  let best = 0;
  for (const c of candidates) best = Math.max(best, matches.get(c.id) ?? 0);
  return { best, holders: best === 0 ? [] : candidates.filter((c) => (matches.get(c.id) ?? 0) === best) };
}

/**
 * The candidates with the fewest blocks in the index: Ray's `get_smallest_tenants` and
 * SGLang's `get_smallest_tenant` (fewest characters in the tree), read as "the emptiest
 * estimated cache". Unlike Ray's, only candidates count: a tenant that cannot take the
 * request is no answer.
 */
export function smallestTrees(candidates: readonly Candidate[], index: PrefixIndexReader): Candidate[] {
  let fewest = Number.POSITIVE_INFINITY;
  for (const c of candidates) fewest = Math.min(fewest, index.blocksOf(c.id));
  return candidates.filter((c) => index.blocksOf(c.id) === fewest);
}

/** `first` (in its order), then every other candidate in `rest`'s order. */
export function thenTheRest(first: readonly Candidate[], rest: readonly Candidate[]): Candidate[] {
  const taken = new Set(first);
  return [...first, ...rest.filter((c) => !taken.has(c))];
}
