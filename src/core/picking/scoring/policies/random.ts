import { uniformInt } from "../../../../lib/random";
import { eligibleCandidates } from "../pipeline";
import type { ScoringPolicy } from "../types";
import { pickResult } from "./result";

/** Uniform random: a Fisher–Yates shuffle of the eligible replicas. The baseline every benchmark starts from. */
export const randomPolicy: ScoringPolicy = (input) => {
  const order = eligibleCandidates(input.candidates);
  for (let i = order.length - 1; i > 0; i--) {
    const j = uniformInt(input.random, i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return pickResult(input, order, "random");
};
