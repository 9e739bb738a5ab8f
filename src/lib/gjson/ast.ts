/**
 * The compiled form of a GJSON path. A path is a list of segments joined by `|`; a
 * segment is a list of steps joined by `.`. The split matters because GJSON treats the
 * two separators differently after `#`, `#(...)#` and wildcard keys: after a `.` the rest
 * of the segment runs on every element (or on every matching key), after a `|` it runs
 * once on the whole result.
 */

export interface Path {
  segments: Step[][]; // never empty; every segment has at least one step
}

export type Step = KeyStep | CountStep | CollectStep | QueryStep | ModifierStep | LiteralStep | MultipathStep;

/** An object key (possibly with `*`/`?` wildcards) or, on an array, a decimal index. */
export interface KeyStep {
  kind: "key";
  /** The key with `\` escapes removed; the wildcard pattern when `wild`. */
  text: string;
  /** True when the raw key has an unescaped `*` or `?`. */
  wild: boolean;
  /** The array index when the raw key is all ASCII digits (GJSON does not unescape here). */
  index: number | null;
}

/** `#` on an array: its length. */
export interface CountStep {
  kind: "count";
}

/** `#.rest`: `rest` evaluated on every element; the found values form an array. */
export interface CollectStep {
  kind: "collect";
  each: Path;
  /** `rest` starts with `@`, `[` or `{`: on an object gjson reads `#.` as the key `#` then `|rest`. */
  eachPipes: boolean;
}

export type QueryOp = "=" | "!=" | "<" | "<=" | ">" | ">=" | "%" | "!%";

/** `~true`, `~false`, `~null`, `~*`: the compared value is first turned into a boolean. */
export type Tilde = "true" | "false" | "null" | "*";

export interface Condition {
  /** Path evaluated on each element; `empty` when written as nothing, as in `#(=="fb")`. */
  path: Path;
  empty: boolean;
  /** Null for an existence test such as `#(nets)`. */
  op: QueryOp | null;
  /** The right-hand side: unquoted and unescaped if it was quoted, verbatim if bare. */
  value: string;
  /** The right-hand side read as GJSON reads it for a number comparison (Go ParseFloat). */
  number: number;
  tilde: Tilde | null;
}

/** `#(cond)` (first match) or `#(cond)#` (all matches), with an optional `.rest`. */
export interface QueryStep {
  kind: "query";
  cond: Condition;
  all: boolean;
  each: Path | null;
  /**
   * On an object gjson does not run a query: it reads the query text as an object key,
   * cut at the first `.` or `|`. True when no `.` or `|` cuts it, so the whole text is
   * one (practically absent) key and a following `|` is still registered.
   */
  wholeKey: boolean;
  /** `.rest` starts with `@`, `[` or `{`, which gjson reads as `|rest` on an object. */
  eachPipes: boolean;
}

/** The built-in modifiers of gjson v1.18 (its `modifiers` table). */
export type ModifierName =
  | "this"
  | "reverse"
  | "ugly"
  | "pretty"
  | "valid"
  | "flatten"
  | "join"
  | "keys"
  | "values"
  | "tostr"
  | "fromstr"
  | "group"
  | "dig";

export interface ModifierStep {
  kind: "modifier";
  name: ModifierName;
  /** `@pretty:{"sortKeys":true}`: the only @pretty option that changes the value. */
  sortKeys: boolean;
  /** `@flatten:{"deep":true}`. */
  deep: boolean;
  /** `@dig:path`: the path looked for at every depth. */
  dig: Path | null;
}

/** `!true`, `!"text"`, `!12`, `!{...}`: a value written in the path itself. */
export interface LiteralStep {
  kind: "literal";
  value: unknown;
}

export interface MultipathEntry {
  /** Key used in a `{...}` multipath; null in a `[...]` one. */
  name: string | null;
  path: Path;
}

/** `[a,b]` builds an array, `{a,b}` an object, from paths evaluated on the same input. */
export interface MultipathStep {
  kind: "multipath";
  shape: "array" | "object";
  entries: MultipathEntry[];
}
