import { powerOfTwo } from "../../load-policies/power-of-two";
import type { Candidate, ScoringPolicy } from "../types";
import { pickResult } from "./result";

/**
 * Power of two choices on in-flight, Ray Serve's default router: the pool policy
 * `power_of_two` itself (src/core/picking/load-policies/power-of-two.ts), so the benchmark measures
 * what pools run today.
 */
export const powerOfTwoPolicy: ScoringPolicy = (input) =>
  pickResult(input, powerOfTwo(input.candidates, input.random) as Candidate[], "power_of_two");
