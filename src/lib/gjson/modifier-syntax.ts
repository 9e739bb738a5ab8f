/**
 * Where a modifier and its argument end, as gjson v1.18's execModifier reads them, and
 * which arguments are accepted. The name runs to the first `.`, `|` or `:`. After a `:`,
 * an argument starting with `{`, `[` or `"` is one JSON value (cut by squash); any other
 * argument runs to the next `|` (a `.` does not end it, so `@dig:a.b` looks for `a.b`),
 * skipping bracketed or quoted groups.
 *
 * gjson ignores an argument a modifier does not read, and ignores option keys it does not
 * know; both are rejected here, so that `@join:true` (which gjson reads as no option at
 * all) or `@flatten:{"deap":true}` fail at config load instead of quietly doing nothing.
 */
import type { ModifierName } from "./ast";
import { GjsonSyntaxError } from "./errors";
import { squashEnd } from "./lexer";

const NAMES: readonly ModifierName[] = ["this", "reverse", "ugly", "pretty", "valid", "flatten", "join", "keys", "values", "tostr", "fromstr", "group", "dig"];
const MODIFIERS: ReadonlySet<string> = new Set<string>(NAMES);

/** The options each modifier reads from a JSON object argument, with the JSON type each takes. */
const OPTIONS: Partial<Record<ModifierName, Readonly<Record<string, "boolean" | "string" | "number">>>> = {
  pretty: { sortKeys: "boolean", indent: "string", prefix: "string", width: "number" },
  flatten: { deep: "boolean" },
  join: { preserve: "boolean" },
};

export interface ModifierScan {
  name: ModifierName;
  /** The argument's span, or null when there is none (or it is empty, as in `@this:`). */
  arg: [number, number] | null;
  /** The argument parsed, for the modifiers that take a JSON object of options. */
  options: Readonly<Record<string, unknown>>;
  /** Index after the modifier and its argument: `end`, `.` or `|`. */
  next: number;
}

/** `src[at]` is `@`. */
export function scanModifier(src: string, at: number, end: number): ModifierScan {
  let i = at + 1;
  while (i < end && src[i] !== "." && src[i] !== "|" && src[i] !== ":") i++;
  const name = src.slice(at + 1, i);
  if (name === "") throw new GjsonSyntaxError("missing modifier name after '@'", at);
  if (!MODIFIERS.has(name)) {
    // gjson reads an unknown `@name` as an object key; a typo must not become a key lookup.
    throw new GjsonSyntaxError(`unknown modifier @${name} (gjson v1.18 has @${NAMES.join(", @")}); write '\\@' for a key that starts with '@'`, at);
  }
  const modifier = name as ModifierName;
  if (src[i] !== ":" || i + 1 >= end) return checked(modifier, null, {}, src[i] === ":" ? i + 1 : i, at);
  const { arg, next } = scanArgument(src, i + 1, end);
  return checked(modifier, arg[1] > arg[0] ? arg : null, readOptions(modifier, src, arg), next, at);
}

function scanArgument(src: string, start: number, end: number): { arg: [number, number]; next: number } {
  const c = src[start] ?? "";
  if (c === "{" || c === "[" || c === '"') {
    const close = squashEnd(src, start, end);
    if (close < 0) throw new GjsonSyntaxError("unclosed modifier argument", start);
    const next = close + 1;
    // gjson ignores what follows a JSON argument unless it is `.` or `|`.
    if (next < end && src[next] !== "." && src[next] !== "|") {
      throw new GjsonSyntaxError(`unexpected '${src[next] ?? ""}' after a modifier argument; expected '.', '|' or the end`, next);
    }
    return { arg: [start, next], next };
  }
  let j = start;
  while (j < end && src[j] !== "|") {
    const ch = src[j];
    if (ch === "{" || ch === "[" || ch === '"' || ch === "(") {
      const close = squashEnd(src, j, end);
      j = close < 0 ? end : close + 1;
    } else j++;
  }
  return { arg: [start, j], next: j };
}

function readOptions(name: ModifierName, src: string, [start, end]: [number, number]): Record<string, unknown> {
  const allowed = OPTIONS[name];
  if (!allowed || end <= start) return {};
  const text = src.slice(start, end);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new GjsonSyntaxError(`@${name} takes a JSON object of options such as {${Object.keys(allowed).map((k) => `"${k}":...`).join(",")}}; gjson ignores '${text}'`, start);
  }
  for (const [key, value] of Object.entries(parsed)) {
    const type = allowed[key];
    if (!type) throw new GjsonSyntaxError(`@${name} has no option '${key}' (gjson ignores it); options: ${Object.keys(allowed).join(", ")}`, start);
    if (typeof value !== type) throw new GjsonSyntaxError(`@${name} option '${key}' takes a ${type}`, start);
  }
  return parsed as Record<string, unknown>;
}

function checked(name: ModifierName, arg: [number, number] | null, options: Record<string, unknown>, next: number, at: number): ModifierScan {
  if (name === "dig" && arg === null) {
    // gjson looks for the empty path, which is never found: `[]`, always there.
    throw new GjsonSyntaxError("@dig needs a path to look for, as in @dig:name", at);
  }
  if (arg !== null && name !== "dig" && !OPTIONS[name]) {
    throw new GjsonSyntaxError(`@${name} takes no argument (gjson ignores it)`, arg[0]);
  }
  if (name === "join" && options["preserve"] === true) {
    // gjson then writes duplicate keys, which a parsed object cannot hold.
    throw new GjsonSyntaxError('@join:{"preserve":true} is not supported: duplicate keys cannot be represented', at);
  }
  return { name, arg, options, next };
}
