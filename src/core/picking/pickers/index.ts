import type { Picker } from "../plugin";
import { leastLoadedPicker } from "./least-loaded";
import { maxScorePicker } from "./max-score";
import { powerOfTwoPicker } from "./power-of-two";
import { randomPicker } from "./random";
import { rayPrefixPicker } from "./ray-prefix";
import { roundRobinPicker } from "./round-robin";
import { sglangCacheAwarePicker } from "./sglang-cache-aware";
import { switchyardPicker } from "./switchyard";
import { weightedPicker } from "./weighted";

/**
 * Every picker a profile may name. A new algorithm is one file plus one line here. The
 * prefix pickers (ray_prefix, sglang_cache_aware, switchyard) are whole algorithms, not a
 * sum of scores: their projects' rules are kept as they are, not bent into scorers.
 */
export const PICKERS = {
  weighted: weightedPicker,
  least_loaded: leastLoadedPicker,
  power_of_two: powerOfTwoPicker,
  random: randomPicker,
  round_robin: roundRobinPicker,
  max_score: maxScorePicker,
  ray_prefix: rayPrefixPicker,
  sglang_cache_aware: sglangCacheAwarePicker,
  switchyard: switchyardPicker,
} satisfies Record<string, Picker>;

export type PickerName = keyof typeof PICKERS;
