import { weightedOrder } from "../weighted";
import { leasePicker } from "./lease";

/** The configured split, exactly: in-flight counts are ignored (weighted.ts draws the order). */
export const weightedPicker = leasePicker(weightedOrder, "weighted");
