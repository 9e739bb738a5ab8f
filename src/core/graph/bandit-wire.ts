/** What isolates and a bandit router node's object (src/platform/objects/bandit-state.ts) say to each other. */
import type { Acked, BatchedSync } from "../state/batches";
import type { BanditParams, BanditStateSnapshot } from "./bandits";

/** One feedback call's credit to one arm (checked by the isolate before it is queued, and again by the object). */
export interface BanditFeedback {
  arm: number;
  /** A success rate in [0, 1]. */
  reward: number;
  /** Rows of the request, in [1, MAX_FEEDBACK_ROWS]. */
  rows: number;
}

/** What one isolate was told about a node since its last batch. */
export interface BanditNews {
  feedback: BanditFeedback[];
}

/** An isolate's exchange with a node's object; the node's params ride along, so a config change applies at once. */
export interface BanditSync extends BatchedSync<BanditNews> {
  params: BanditParams;
}

/** The node's arms as the object holds them, and this isolate's acknowledged batches. */
export type BanditView = BanditStateSnapshot & Acked;
