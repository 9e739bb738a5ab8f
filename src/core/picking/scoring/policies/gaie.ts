import { NO_FILTERS, runPipeline } from "../pipeline";
import type { ScoringPolicy } from "../types";
import { pickResult } from "./result";

/**
 * The Gateway API Inference Extension endpoint picker's default profile (v1.2.0+,
 * config/loader/defaults.go): no filters, `prefix-cache-scorer` 3 + `queue-scorer` 2 +
 * `kv-cache-utilization-scorer` 2, `max-score-picker` with random ties; the full sorted
 * list as fallbacks. Weights come from `settings.gaie.weights`.
 *
 * Where it differs from GAIE itself: a stale replica's queue and kv scores are replaced
 * by a stand-in, and with every replica stale it routes by load with two choices
 * (pipeline.ts). GAIE scores stale metrics as they are; the benchmark compares the
 * scoring, not that bug.
 */
export const gaiePolicy: ScoringPolicy = (input) => {
  const { order, reason } = runPipeline(input, input.settings.gaie.weights, NO_FILTERS);
  return pickResult(input, order, reason);
};
