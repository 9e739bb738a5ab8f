/**
 * gjson's queryMatches: how one element's value is tested against a query condition.
 * The comparison is typed by the DOCUMENT value, never by how the literal was written:
 * a string compares as a string (`#(id==1)` matches "1"), a number parses the literal
 * as Go does (`#(n=="10")` matches 10), true/false compare against the words "true" and
 * "false", and null, objects and arrays only pass an existence test.
 */
import type { Condition } from "./ast";
import { MISSING, Opaque } from "./value";
import { wildcardMatch } from "./wildcard";

export function conditionHolds(cond: Condition, result: unknown): boolean {
  // Malformed text gjson still reads as a value compares as that value; as JSON, it only exists.
  const found = result instanceof Opaque ? (result.type === "json" ? {} : result.value) : result;
  let value = found;
  let rhs = cond.value;
  if (cond.tilde) {
    value = tildeTruth(cond.tilde, found);
    rhs = "true";
  }
  if (value === MISSING) return false;
  if (cond.op === null) return true;
  switch (typeof value) {
    case "string":
      return compareString(cond.op, value, rhs);
    case "number":
      return compareNumber(cond.op, value, cond.number);
    case "boolean":
      return value ? trueAgainst(cond.op, rhs) : falseAgainst(cond.op, rhs);
    default:
      return false;
  }
}

/** `~true` and friends turn the value (found or not) into a boolean before comparing. */
function tildeTruth(kind: NonNullable<Condition["tilde"]>, v: unknown): boolean {
  switch (kind) {
    case "*":
      return v !== MISSING;
    case "null":
      return v === MISSING || v === null;
    case "true":
      return v === true || (typeof v === "number" && v !== 0) || (typeof v === "string" && goBool(v) === true);
    case "false":
      return v === MISSING || v === null || v === false || v === 0 || (typeof v === "string" && goBool(v) === false);
  }
}

/** strconv.ParseBool on the lower-cased string; undefined when it does not parse. */
function goBool(s: string): boolean | undefined {
  const l = s.toLowerCase();
  if (l === "1" || l === "t" || l === "true") return true;
  if (l === "0" || l === "f" || l === "false") return false;
  return undefined;
}

function compareString(op: NonNullable<Condition["op"]>, s: string, rhs: string): boolean {
  switch (op) {
    case "=":
      return s === rhs;
    case "!=":
      return s !== rhs;
    case "%":
      return wildcardMatch(s, rhs);
    case "!%":
      return !wildcardMatch(s, rhs);
  }
  const c = compareCodePoints(s, rhs);
  return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
}

function compareNumber(op: NonNullable<Condition["op"]>, n: number, rhs: number): boolean {
  switch (op) {
    case "=":
      return n === rhs;
    case "!=":
      return n !== rhs;
    case "<":
      return n < rhs;
    case "<=":
      return n <= rhs;
    case ">":
      return n > rhs;
    case ">=":
      return n >= rhs;
    default:
      return false; // `%` only applies to strings
  }
}

/** gjson's table for a true value: it sorts after "false". */
function trueAgainst(op: NonNullable<Condition["op"]>, rhs: string): boolean {
  if (op === "=") return rhs === "true";
  if (op === "!=") return rhs !== "true";
  if (op === ">") return rhs === "false";
  return op === ">=";
}

function falseAgainst(op: NonNullable<Condition["op"]>, rhs: string): boolean {
  if (op === "=") return rhs === "false";
  if (op === "!=") return rhs !== "false";
  if (op === "<") return rhs === "true";
  return op === "<=";
}

/** Go compares UTF-8 bytes, which orders by code point; JS `<` orders UTF-16 units. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a.charCodeAt(i) === b.charCodeAt(i)) continue;
    const ca = a.codePointAt(i) ?? 0;
    const cb = b.codePointAt(i) ?? 0;
    return ca < cb ? -1 : 1;
  }
  return a.length - b.length;
}
