/**
 * Plain data RouteWise decides on (src/core/routewise/*). The config types come from
 * src/core/config/routewise-schema.ts; these are what the isolate knows at decision time.
 */
import type { Pricing, ProviderRoute, RouterParams } from "../config/routewise-schema";

export type { Pricing, ProviderRoute, RouterParams };
export type ProviderType = ProviderRoute["provider_type"];

/** Percentile key ("p50", "p99.9") to value. */
export type Percentiles = Record<string, number>;

/** One served request as a route's envelope remembers it. */
export interface LatencySample {
  /** Epoch ms when the request finished. */
  at: number;
  /** Time to first byte: first streamed chunk, or response headers for a non-streamed answer. */
  ttftMs: number;
  totalMs: number;
  promptTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

/** One route's latency and token envelope, computed from its samples in the window. */
export interface Envelope {
  samples: number;
  ttftMs: Percentiles;
  totalMs: Percentiles;
  outputTokens: Percentiles;
  meanTtftMs: number;
  meanTotalMs: number;
  meanPromptTokens: number;
  meanOutputTokens: number;
  /** Mean ms per output token past the first: (total − ttft) / max(1, output − 1). */
  msPerOutputToken: number;
  /** Cached prompt tokens ÷ prompt tokens over the window (0 when none were reported). */
  cachedRatio: number;
  /** TTFT over the shorter latency window: the SLO check and the hedge delay read it. */
  recent: { samples: number; ttftMs: Percentiles };
}

/** A quota as the isolate last heard it from the quota's object. */
export interface QuotaView {
  /** Units left (tokens or requests); 0 when exhausted or failed safe. */
  remaining: number;
  limit: number;
  unit: "tokens" | "requests";
  /** Ms until the window resets (null: unknown, or a rolling window). */
  resetInMs: number | null;
  /** Why the quota counts as exhausted when its source cannot be trusted. */
  failSafe: "never_polled" | "source_unreachable" | null;
}

/** What the decision knows of one route for one request. */
export interface RouteInput {
  id: string;
  type: ProviderType;
  pricing: Pricing | undefined;
  envelope: Envelope | null;
  /** Quota routes only. */
  quota?: QuotaView;
  /** Concurrency routes only: slots this isolate may use now without asking (and the pool's limit). */
  slots?: { free: number; limit: number };
  /** False when the route recently failed enough that it should not be chosen (circuit open). */
  healthy: boolean;
}

/** What the request itself tells. */
export interface RequestShape {
  promptTokens: number;
  /** The request's max_tokens / max_completion_tokens, if it set one. */
  maxTokens: number | null;
  /** Answers the request asks for (`n`, `best_of`): each is generated and billed. Absent: 1. */
  choices?: number;
}

/** Traffic the model sees across every isolate, for the quota and concurrency caps. */
export interface Demand {
  requestsPerS: number;
}
