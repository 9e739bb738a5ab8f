/** Helpers over parsed JSON values, shared by the evaluator and the comparisons. */

/** "Nothing was found", distinct from a found JSON null. */
export const MISSING: unique symbol = Symbol("gjson.missing");

export type JsonObject = Record<string, unknown>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A value JSON.parse could have produced; anything else (undefined, functions) is not there. */
export function isJson(v: unknown): boolean {
  const t = typeof v;
  return v === null || t === "string" || t === "number" || t === "boolean" || t === "object";
}

/** An own property only: `__proto__` or `toString` must not be found through the prototype. */
export function own(obj: JsonObject, key: string): unknown {
  if (!Object.hasOwn(obj, key)) return MISSING;
  const v = obj[key];
  return isJson(v) ? v : MISSING;
}

/** Sets an own enumerable property even for the key `__proto__`. */
export function define(obj: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
