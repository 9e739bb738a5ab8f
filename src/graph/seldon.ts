import { isJsonObject } from "./json";

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

/** Rows in a Seldon request (features.shape[0]), which a reward is multiplied by. */
export function seldonRows(request: unknown): number {
  if (!isJsonObject(request) || !isJsonObject(request.data)) return 1;
  const data = request.data;
  if (Array.isArray(data.ndarray)) return Math.max(1, data.ndarray.length);
  if (isJsonObject(data.tensor) && Array.isArray(data.tensor.shape) && typeof data.tensor.shape[0] === "number") return Math.max(1, data.tensor.shape[0]);
  return 1;
}
