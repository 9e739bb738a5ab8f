import * as z from "zod/mini";

/**
 * How large a number the config may hold. Each number field of the schemas has a bound
 * that keeps whatever the router does with it finite and exact: times are multiplied into
 * ms, added to Date.now() and handed to timers; weights and prices are summed and
 * multiplied; counts are compared with counters. A value past its bound is refused at load
 * with its path and unit (`atMost`); docs/config.md "Bounds" lists them.
 * (RouteWise's runtime bounds, src/core/routewise/bounds.ts, re-export the ones it shares.)
 */

/** Time to first token or total time of one request, ms: an hour, far past any deadline a route is given. Also deadlines, try and step timeouts, queue waits and SLOs. */
export const MAX_REQUEST_MS = 3_600_000;
/** A client may ask for at most this many output tokens (max_tokens / max_completion_tokens); no model writes a tenth of it in one answer. Also RouteWise's fixed output prediction. */
export const MAX_OUTPUT_TOKENS_ASKED = 1_000_000;
/** Units a quota may count (used, limit): past this, integers lose exactness as doubles. */
export const MAX_QUOTA_UNITS = Number.MAX_SAFE_INTEGER;

/** One probe of a replica's metrics or a quota's usage API, ms: off the request path, and an answer later than a minute says nothing current. */
export const MAX_PROBE_TIMEOUT_MS = 60_000;
/** Periods and windows of health state (circuit windows and cool-downs, health checks, scrapes, staleness, polls), ms: past a day they say nothing current; far inside a timer's 2^31 − 1 ms. */
export const MAX_PERIOD_MS = 86_400_000;
/** MAX_PERIOD_MS for fields written in seconds. */
export const MAX_PERIOD_S = 86_400;
/** A quota's window, how long its last poll is believed, RouteWise's latency windows, s: a year of 366 days (yearly plans); × 1000 plus now stays a valid Date. */
export const MAX_WINDOW_S = 31_622_400;
/** A pin's life after its last use, s: 30 days; a client away longer has no KV cache left to come back to. */
export const MAX_PIN_TTL_S = 2_592_000;
/** Retry-After of a request shed by a saturated pool, s: an hour; a client told to wait longer has gone elsewhere. */
export const MAX_RETRY_AFTER_S = 3_600;
/** A replica's or scorer's weight: a million to one already sends the lighter nothing, and sums over thousands of replicas stay exact. */
export const MAX_WEIGHT = 1_000_000;
/** Counts a setting compares a counter with (requests in flight, failures, probes, slots, queue depth, blocks), and factors on them: a million is past one replica's or subscription's traffic, and products with counts stay exact. */
export const MAX_COUNT = 1_000_000;
/** Requests waiting per pool in one isolate: each holds its request in the isolate's 128 MB, and ten thousand outlast any ttl_ms at a replica's pace. */
export const MAX_QUEUE_WAITING = 10_000;
/** Attempts per request: each is an upstream subrequest, and past a hundred retries only prolong an outage. */
export const MAX_ATTEMPTS = 100;
/** Currency per token: 100 (1e8 per million tokens), 100,000× today's dearest model in dollars with room for currencies worth a ten-thousandth of one; × 10 million tokens a request costs at most 1e9. */
export const MAX_PRICE_PER_TOKEN = 100;
/** Samples a route needs before a quota-bearing model serves: a route keeps at most MAX_SAMPLES_PER_ROUTE (2,000, src/core/routewise/envelope.ts), so more could never be reached. */
export const MAX_ENVELOPE_MIN_SAMPLES = 2_000;
/** Finished spans one isolate keeps while its trace exports lag: about 1 KB each, so 10 MB of the isolate's 128 MB at most. */
export const MAX_QUEUED_SPANS = 10_000;
/** A Splitter step's weight: a percentage of the node's traffic (the steps' weights sum to 100). */
export const MAX_SPLIT_PERCENT = 100;

/** A limit's requests per minute: a billion is past any one key's traffic (the fleet's objects take ~1,000 grant calls a second each), and grants of it stay exact. */
export const MAX_REQUESTS_PER_MINUTE = 1_000_000_000;
/** A limit's input+output tokens per minute: a trillion is past any fleet's throughput, and sums of it with reservations stay exact doubles. */
export const MAX_TOKENS_PER_MINUTE = 1_000_000_000_000;
/** A spend budget, currency: a trillion; with prices up to MAX_PRICE_PER_MILLION the sums stay far inside a double's exact range for cents. */
export const MAX_SPEND = 1_000_000_000_000;
/** A model's price per million tokens: MAX_PRICE_PER_TOKEN written per million (RouteWise prices per token, limits per million). */
export const MAX_PRICE_PER_MILLION = 100_000_000;

/** A check that a number is at most `max`, refused as `must be <= max (unit)`. */
export function atMost(max: number, unit: string) {
  return z.refine<number>((x) => x <= max, { error: `must be <= ${max} (${unit})` });
}
