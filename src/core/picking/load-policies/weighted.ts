import { weightedOrder } from "../weighted";
import type { Policy } from "./types";

/** The configured split, exactly: in-flight counts are ignored. */
export const weighted: Policy = (candidates, random) => weightedOrder(candidates, random);
