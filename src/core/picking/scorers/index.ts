import type { Scorer } from "../plugin";
import type { ScorerName } from "../scoring/settings";
import { inflightScorer } from "./inflight";
import { kvCacheScorer } from "./kv-cache";
import { localityScorer } from "./locality";
import { loraScorer } from "./lora";
import { prefixScorer } from "./prefix";
import { queueScorer } from "./queue";

/** Every scorer a weighted profile may combine, by the name its weight is given under (scoring/settings.ts). */
export const SCORERS: Readonly<Record<ScorerName, Scorer>> = {
  prefix: prefixScorer,
  queue: queueScorer,
  kvCache: kvCacheScorer,
  inflight: inflightScorer,
  lora: loraScorer,
  locality: localityScorer,
};
