import type { Scorer } from "../plugin";
import type { Candidate } from "../scoring/types";

/**
 * Locality: 1 when the replica carries one of the request's location labels with the same
 * value (e.g. the request entered in colo AMS and the replica is labelled `colo: AMS`, or
 * both are `region: weur`), else 0. A request with no location scores 0 everywhere, which
 * leaves the order to the other scorers. No engine metric: it never goes stale.
 * (Ray's LocalityMixin prefers the same node, then the same AZ, in the same spirit.)
 */
export function localityScores(candidates: readonly Candidate[], locality: Readonly<Record<string, string>>): number[] {
  const wanted = Object.entries(locality);
  return candidates.map((c) => (wanted.some(([key, value]) => c.labels[key] === value) ? 1 : 0));
}

/** Reads the request's entry point against the replicas' labels. */
export const localityScorer: Scorer = { sees: "view", score: (ctx) => localityScores(ctx.candidates, ctx.request.locality) };
