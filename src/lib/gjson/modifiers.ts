/**
 * gjson v1.18's built-in modifiers, applied to a parsed value. gjson runs a modifier on
 * the raw text of the current result, and on the empty text when nothing was found
 * (after a `|` that gjson still follows): most modifiers then yield nothing, but @keys
 * and @values yield `[]`, @tostr the empty string and @dig whatever its path finds on
 * nothing. Those are the answers here too, so `missing|@keys` exists, as in KServe.
 */
import type { ModifierStep, Path } from "./ast";
import { compareCodePoints } from "./compare";
import { lenientParse } from "./lenient";
import { MISSING, Opaque, define, isObject, serialise } from "./value";
import type { JsonObject } from "./value";

/** Evaluates a path on a value (the evaluator's evalPath, passed in to keep this file free of it). */
export type Walk = (input: unknown, path: Path) => unknown;

export function applyModifier(value: unknown, step: ModifierStep, walk: Walk): unknown {
  if (value instanceof Opaque) return onOpaque(value, step, walk);
  switch (step.name) {
    case "this":
    case "ugly": // whitespace only: the parsed value is the same
    case "valid": // a parsed value is valid JSON; nothing stays nothing
      return value;
    case "pretty":
      return step.sortKeys ? sortKeysDeep(value) : value;
    case "reverse":
      return reverse(value);
    case "flatten":
      return Array.isArray(value) ? value.flat(step.deep ? Infinity : 1) : value;
    case "join":
      return Array.isArray(value) ? join(value) : value;
    case "keys":
      return keys(value);
    case "values":
      return values(value);
    case "tostr":
      return value === MISSING ? "" : serialise(value);
    case "fromstr":
      return fromString(value);
    case "group":
      return isObject(value) ? group(value) : MISSING;
    case "dig":
      return dig(value, step.dig, walk);
  }
}

/**
 * gjson's text scanner decides what most modifiers make of malformed text; only the
 * answers that do not depend on it are given, the rest is nothing (README: differences).
 */
function onOpaque(value: Opaque, step: ModifierStep, walk: Walk): unknown {
  switch (step.name) {
    case "this":
      return value;
    case "valid":
    case "fromstr": // gjson checks the input is valid JSON first
      return MISSING;
    case "tostr":
      return value.raw;
    case "keys":
      return value.type === "json" ? MISSING : [null]; // a scalar iterates once, with no key
    case "reverse":
    case "flatten":
    case "join":
    case "ugly":
    case "pretty":
      return value.type === "json" ? MISSING : value; // scalars come back unchanged
    case "group":
      return MISSING;
    case "values":
      return MISSING;
    case "dig": {
      if (value.type === "json" || step.dig === null) return MISSING;
      const found = walk(value, step.dig);
      return found === MISSING ? [] : embeddable([found]);
    }
  }
}

function reverse(value: unknown): unknown {
  if (Array.isArray(value)) return [...value].reverse();
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value).reverse()) define(out, key, value[key]);
  return out;
}

/** tidwall/pretty's SortKeys: every object's keys in byte order, at every depth. */
function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value).sort(compareCodePoints)) define(out, key, sortKeysDeep(value[key]));
  return out;
}

/** Objects of the array merged in order, later keys winning; other elements skipped. */
function join(array: unknown[]): JsonObject {
  const out: JsonObject = {};
  for (const element of array) {
    if (!isObject(element)) continue;
    for (const key of Object.keys(element)) define(out, key, element[key]);
  }
  return out;
}

/** An array has one null "key" per element; a scalar iterates once, also with no key. */
function keys(value: unknown): unknown[] {
  if (value === MISSING) return [];
  if (isObject(value)) return Object.keys(value);
  if (Array.isArray(value)) return value.map(() => null);
  return [null];
}

function values(value: unknown): unknown[] {
  if (value === MISSING) return [];
  if (isObject(value)) return Object.values(value);
  if (Array.isArray(value)) return value;
  return [value];
}

/**
 * gjson's Parse(json).String() reparsed: a string's contents are read as JSON (leniently,
 * as gjson does); null's String() is empty, so it yields nothing; any other value's
 * String() is its own JSON text or a number spelling that parses back to the same number.
 */
function fromString(value: unknown): unknown {
  if (value === MISSING || value === null) return MISSING;
  if (typeof value === "string") return lenientParse(value);
  return value;
}

/** For each key holding an array, element i goes into object i; other keys are skipped. */
function group(value: JsonObject): JsonObject[] {
  const out: JsonObject[] = [];
  for (const key of Object.keys(value)) {
    const column = value[key];
    if (!Array.isArray(column)) continue;
    column.forEach((element: unknown, i) => {
      const row = out[i] ?? (out[i] = {});
      define(row, key, element);
    });
  }
  return out;
}

/** Every value the path finds, on this value and on everything inside it, in document order. */
function dig(value: unknown, path: Path | null, walk: Walk): unknown {
  if (path === null) return MISSING;
  const found: unknown[] = [];
  const visit = (node: unknown): void => {
    const hit = walk(node, path);
    if (hit !== MISSING) found.push(hit);
    if (Array.isArray(node)) node.forEach(visit);
    else if (isObject(node)) Object.values(node).forEach(visit);
  };
  visit(value);
  return embeddable(found);
}

/** gjson copies each part's raw text into the new array; malformed text makes it unreadable. */
export function embeddable(parts: unknown[]): unknown {
  return parts.some((p) => p instanceof Opaque) ? MISSING : parts;
}
