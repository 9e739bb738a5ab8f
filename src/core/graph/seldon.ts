import { MAX_FEEDBACK_ROWS } from "./bandits";
import { isJsonObject } from "../../lib/json";

/**
 * The route in a Seldon router's answer, as Seldon's executor reads it
 * (ExtractRouteFromSeldonJson): a SeldonMessage whose data.ndarray holds numbers or
 * lists (the first element of each list counts), or data.tensor.values, or a bare JSON
 * array of numbers. Only the first route is used.
 */
export function parseSeldonRoute(value: unknown): number | null {
  const first = (items: unknown): number | null => {
    if (!Array.isArray(items) || items.length === 0) return null;
    const head: unknown = Array.isArray(items[0]) ? items[0][0] : items[0];
    return typeof head === "number" && Number.isInteger(head) ? head : null;
  };
  if (Array.isArray(value)) return first(value);
  if (!isJsonObject(value) || !isJsonObject(value.data)) return null;
  const data = value.data;
  if (Array.isArray(data.ndarray)) return first(data.ndarray);
  if (isJsonObject(data.tensor) && Array.isArray(data.tensor.values)) return first(data.tensor.values);
  return null;
}

export type SeldonRows = { ok: true; rows: number } | { ok: false; message: string };

/**
 * Rows in a Seldon request (features.shape[0]), which a reward is multiplied by: the
 * length of `data.ndarray`, or `data.tensor.shape[0]`, whose shape must be whole numbers
 * and agree with the tensor's `values`. An empty request, or one with other data, counts
 * as one row. More than MAX_FEEDBACK_ROWS rows is refused: the count is the caller's
 * claim, and it weighs the reward.
 */
export function seldonRows(request: unknown): SeldonRows {
  if (!isJsonObject(request) || !isJsonObject(request.data)) return { ok: true, rows: 1 };
  const data = request.data;
  let rows = 1;
  if (Array.isArray(data.ndarray)) rows = data.ndarray.length;
  else if (isJsonObject(data.tensor) && data.tensor.shape !== undefined) {
    const shape = data.tensor.shape;
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => typeof d === "number" && Number.isSafeInteger(d) && d >= 0)) {
      return { ok: false, message: "request.data.tensor.shape must be a non-empty list of whole numbers >= 0" };
    }
    const values = data.tensor.values;
    if (Array.isArray(values) && (shape as number[]).reduce((a, b) => a * b, 1) !== values.length) {
      return { ok: false, message: `request.data.tensor.shape does not match its ${values.length} values` };
    }
    rows = shape[0] as number;
  }
  if (rows > MAX_FEEDBACK_ROWS) return { ok: false, message: `request has ${rows} rows; feedback credits at most ${MAX_FEEDBACK_ROWS} per call` };
  return { ok: true, rows: Math.max(1, rows) };
}
