import type { Guard } from "../plugin";
import { balance } from "./balance";
import { rayBalance } from "./ray-balance";
import { sglangBalance } from "./sglang-balance";
import { staleMetrics } from "./stale-metrics";

/**
 * Every guard a profile may name; the first whose condition holds answers the pick. A new
 * guard is one file plus one line here. (The busy cap, pickers/busy-cap.ts, is no guard of this
 * kind: it does not answer a pick, it narrows who may win on prefix in switchyard's picker.)
 */
export const GUARDS = {
  stale_metrics: staleMetrics,
  balance,
  ray_balance: rayBalance,
  sglang_balance: sglangBalance,
} satisfies Record<string, Guard>;

export type GuardName = keyof typeof GUARDS;
