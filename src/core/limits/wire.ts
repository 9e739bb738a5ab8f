import type { Acked, BatchedSync } from "../state/batches";
import type { SpendWindow } from "../config/limits-schema";

/**
 * What an isolate and a principal's limits object (src/platform/objects/principal-limits.ts)
 * say to each other, on the shared-state protocol (src/core/state/batches.ts).
 */

/** The things a limit counts: requests and tokens per minute, spend per window, requests at once. */
export const DIMENSIONS = ["requests", "tokens", "spend", "concurrent"] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** A window a dimension is counted in: requests and tokens by the UTC minute, spend by its own; concurrency has none. */
export type WindowKind = "minute" | SpendWindow | "none";

/** One dimension's limit: how much per window. `resetAt` (epoch ms) for a fixed window. */
export interface DimensionLimit {
  total: number;
  window: WindowKind;
  resetAt?: number;
  /** Spend only: the fraction used from which answers carry a budget warning. */
  warnAt?: number;
}

/** A bucket's limits, by dimension (absent: not limited). The tightest of the rules sharing a scope. */
export type BucketLimits = Partial<Record<Dimension, DimensionLimit>>;

/** Usage settled in one isolate: per dimension, the amount and the window it was reserved in. */
export interface UsageItem {
  dim: Dimension;
  window: number;
  amount: number;
}

export interface LimitNews {
  usage: UsageItem[];
  /** Requests this isolate refused on this bucket since its last report, by the dimension that refused them. */
  refusals?: Partial<Record<Dimension, number>>;
  /** Of the tokens in `usage`, those settled from an estimate (the upstream reported none, or the answer was cut). */
  estimatedTokens?: number;
}

/**
 * A bucket's counts since it was first used, for /metrics: every window's use (and use of
 * dimensions it does not limit), and refusals by the dimension that refused. Stored with
 * the allowance, so they survive a restart and a resent batch counts once.
 */
export interface LimitCounters {
  requests: number;
  tokens: number;
  spend: number;
  refusals: Partial<Record<Dimension, number>>;
  /** Of `tokens`, those settled from an estimate; absent in state stored before it was kept. */
  estimatedTokens?: number;
}

export interface LimitSync extends BatchedSync<LimitNews> {
  limits: BucketLimits;
  /** Unspent allowance this isolate wants to hold from now, per dimension (absolute: a resend asks the same). */
  hold: Partial<Record<Dimension, number>>;
  /** How long the grant lasts unless renewed. */
  ttlMs: number;
}

/** One dimension as the object answers it to one isolate. */
export interface DimensionGrant {
  total: number;
  /** The window the grant is for, and when it ends (epoch ms; MAX_SAFE_INTEGER: never). */
  window: number;
  endsAt: number;
  /** Unspent allowance this isolate holds, after the usage the object acknowledged. */
  granted: number;
  /** Neither spent nor granted to any isolate. */
  free: number;
  /** Spent in this window by every isolate (acknowledged reports). */
  spent: number;
}

export interface LimitAnswer extends Acked {
  dims: Partial<Record<Dimension, DimensionGrant>>;
  /** The grant lapses at this time (object's clock) unless renewed. */
  expiresAt: number;
}

/** The object's state, for tests and views. */
export interface LimitSnapshot {
  dims: Partial<Record<Dimension, { total: number; window: number; spent: number; granted: number; isolates: number }>>;
  counters: LimitCounters;
}
