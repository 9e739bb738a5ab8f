import { uniformInt } from "../../../lib/random";
import type { Picker } from "../plugin";

/**
 * Uniform random: a Fisher–Yates shuffle of the kept replicas. The baseline every
 * benchmark starts from.
 *
 * It sees the view though it reads nothing of it: random came with the prefix policies
 * (issue 9) as their baseline, and a random pool has read its requests since, like
 * theirs: prompts recorded in the prefix index, answers timed for the TTFT model, SLO
 * headers honoured. "leases" would switch that off for random pools.
 */
export const randomPicker: Picker = {
  sees: "view",
  pick: ({ input, kept }) => {
    const order = [...kept];
    for (let i = order.length - 1; i > 0; i--) {
      const j = uniformInt(input.random, i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    return { order, reason: "random" };
  },
};
