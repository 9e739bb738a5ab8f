import type { OutputPredictor } from "../config/routewise-schema";
import { percentileAtOrAbove } from "./percentiles";
import type { Envelope } from "./types";

/**
 * Output tokens a request is expected to produce on a route: its output cost, its
 * streaming time and, on a token quota, the units it will use.
 *
 *   fixed                predictor.tokens
 *   max_tokens           the request's max_tokens (worst case); predictor.tokens when it set none
 *   envelope_mean        the route's mean output over the window
 *   envelope_percentile  the route's output at predictor.percentile
 *
 * The envelope modes fall back to predictor.tokens for a route with no envelope yet. The
 * envelope holds only the configured percentiles, not raw samples, so an unconfigured
 * `percentile` reads the nearest stored percentile above it, else the largest stored
 * (percentileAtOrAbove): the prediction errs long, which errs dear and slow. A request's
 * max_tokens caps every mode: the provider stops there.
 */
export function predictOutputTokens(predictor: OutputPredictor, maxTokens: number | null, envelope: Envelope | null): number {
  const predicted = uncapped(predictor, maxTokens, envelope);
  return maxTokens === null ? predicted : Math.min(predicted, maxTokens);
}

function uncapped(predictor: OutputPredictor, maxTokens: number | null, envelope: Envelope | null): number {
  switch (predictor.mode) {
    case "fixed":
      return predictor.tokens;
    case "max_tokens":
      return maxTokens ?? predictor.tokens;
    case "envelope_mean":
      return envelope ? envelope.meanOutputTokens : predictor.tokens;
    case "envelope_percentile":
      return (envelope && percentileAtOrAbove(envelope.outputTokens, predictor.percentile)) ?? predictor.tokens;
  }
}
