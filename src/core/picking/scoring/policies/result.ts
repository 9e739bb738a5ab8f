import type { Candidate, PickInput, PickReason, PickResult, PickerState } from "../types";

/**
 * A policy's answer from its order. Every policy returns the index insert for its first
 * choice, whatever it used to choose: the chosen replica caches the prompt either way, so
 * an index kept while one policy runs stays true when another takes over.
 */
export function pickResult(input: PickInput, order: readonly Candidate[], reason: PickReason, state: PickerState = input.state): PickResult {
  const first = order[0];
  if (first === undefined) return { order: [], reason: "none", insert: null, state };
  return {
    order: order.map((c) => c.id),
    reason,
    insert: input.request.hashes.length > 0 ? { replica: first.id, hashes: input.request.hashes } : null,
    state,
  };
}
