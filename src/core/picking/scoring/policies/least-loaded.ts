import { leastLoaded } from "../../load-policies/least-loaded";
import type { Candidate, ScoringPolicy } from "../types";
import { pickResult } from "./result";

/** Fewest in-flight per unit of weight, random ties: the pool policy `least_loaded` itself. */
export const leastLoadedPolicy: ScoringPolicy = (input) =>
  pickResult(input, leastLoaded(input.candidates, input.random) as Candidate[], "least_loaded");
