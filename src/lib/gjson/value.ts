/** Helpers over parsed JSON values, shared by the evaluator, the modifiers and the comparisons. */
import type { GjsonType } from "./types";

/** "Nothing was found", distinct from a found JSON null. gjson's empty Result (Raw ""). */
export const MISSING: unique symbol = Symbol("gjson.missing");

export type JsonObject = Record<string, unknown>;

/**
 * A value gjson's lenient Parse reports for text that is not valid JSON, such as
 * `@fromstr` on the string "123abc" (gjson: the number 0, raw "123abc") or "{oops"
 * (gjson: JSON, raw "{oops"). It exists and compares as gjson's Result does, but has no
 * children: what gjson's scanner reads inside malformed bytes is not reproduced.
 */
export class Opaque {
  constructor(
    readonly type: GjsonType,
    /** gjson's Raw: the text as gjson cut it. */
    readonly raw: string,
    /** The scalar gjson compares with (Num, Str, true/false/null); the raw text for "json". */
    readonly value: unknown,
  ) {}
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Opaque);
}

/** A value JSON.parse could have produced; anything else (undefined, functions, Opaque) is not. */
export function isJson(v: unknown): boolean {
  const t = typeof v;
  if (t === "object") return !(v instanceof Opaque);
  return v === null || t === "string" || t === "number" || t === "boolean";
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

/**
 * The JSON text of a found value, re-serialised (gjson would hand back the original
 * bytes; the two differ in whitespace, number spelling and string escapes only).
 */
export function serialise(value: unknown): string {
  if (value instanceof Opaque) return value.raw;
  // JSON has no Infinity or NaN, but JSON.parse("1e400") yields Infinity.
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return JSON.stringify(value);
}

export function typeOf(value: unknown): GjsonType {
  if (value instanceof Opaque) return value.type;
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "number") return "number";
  if (typeof value === "string") return "string";
  return "json";
}
