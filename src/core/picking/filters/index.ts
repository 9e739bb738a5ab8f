import type { Filter } from "../plugin";
import { isFresh } from "../scoring/freshness";
import type { Candidate, PickInput } from "../scoring/types";
import { lora } from "./lora";
import { saturation } from "./saturation";

/** Every filter a profile may name. A new filter is one file plus one line here. */
export const FILTERS = { lora, saturation } satisfies Record<string, Filter>;

export type FilterName = keyof typeof FILTERS;

export interface Filtered {
  kept: Candidate[];
  /** Eligible replicas the filters removed, in input order. */
  dropped: Candidate[];
}

/** The named filters in order, each on what the one before kept. */
export function applyFilters(eligible: readonly Candidate[], input: PickInput, names: readonly FilterName[]): Filtered {
  const fresh = (c: Candidate) => isFresh(c.metrics, input.now, input.settings.stalenessMs);
  let kept: Candidate[] = [...eligible];
  for (const name of names) kept = FILTERS[name].keep(kept, fresh, input);
  const survivors = new Set(kept);
  return { kept, dropped: eligible.filter((c) => !survivors.has(c)) };
}
