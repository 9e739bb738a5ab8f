/**
 * Turns GJSON path text into the AST of ast.ts. Anything this evaluator would read
 * differently from gjson v1.18, or not implement at all, is a GjsonSyntaxError here
 * rather than a condition that silently never matches.
 */
import type { Condition, MultipathEntry, Path, QueryOp, Step, Tilde } from "./ast";
import { GjsonSyntaxError } from "./errors";
import { goParseFloat } from "./gofloat";
import { gjsonPipeSplit, scanKey, scanMultipath, scanQuery, skipString, trimSpan } from "./lexer";
import { scanLiteral } from "./literal";
import { scanModifier } from "./modifier-syntax";
import { rejectObjectReadings } from "./query-text";

const TILDES: ReadonlySet<string> = new Set<Tilde>(["true", "false", "null", "*"]);

/** Compiles `src[start, end)` as a complete path. */
export function parsePath(src: string, start: number, end: number): Path {
  return parseUntil(src, start, end, false).path;
}

interface Parsed {
  path: Path;
  /** Where parsing stopped: `end`, or a top-level `|` when asked to stop there. */
  next: number;
}

interface Component {
  step: Step;
  next: number;
}

/**
 * The rest of a segment after `#.` or `#(...).` runs once per element, up to the next
 * top-level `|` (gjson's splitPossiblePipe); `stopAtPipe` parses such a sub-path.
 */
function parseUntil(src: string, start: number, end: number, stopAtPipe: boolean): Parsed {
  const segments: Step[][] = [];
  let steps: Step[] = [];
  let pos = start;
  let fresh = true; // where gjson starts a new Get(): see parseComponent
  for (;;) {
    if (fresh && src.startsWith("..", pos) && pos + 1 < end) {
      throw new GjsonSyntaxError("JSON Lines paths ('..') are not supported", pos);
    }
    const { step, next } = parseComponent(src, pos, end, fresh, stopAtPipe);
    steps.push(step);
    if (next >= end) break;
    const sep = src[next];
    if (sep === "|") {
      if (stopAtPipe) {
        segments.push(steps);
        return { path: { segments }, next };
      }
      segments.push(steps);
      steps = [];
      pos = next + 1;
      fresh = true;
      continue;
    }
    if (sep !== ".") {
      throw new GjsonSyntaxError(`unexpected '${sep ?? ""}' after ${describe(step)}; expected '.', '|' or the end`, next);
    }
    pos = next + 1;
    fresh = false;
    // gjson reads `.` as `|` after a modifier, literal or multipath (the rest is a new Get
    // on their output) and before a modifier or multipath (isDotPiperChar). The
    // difference shows after a wildcard key: `a*.@this` takes the first matching key
    // only, as `a*|@this` does; and `a.@keys` runs @keys even when `a` is missing.
    if (step.kind === "modifier" || step.kind === "literal" || step.kind === "multipath" || DOT_PIPERS.has(src[pos] ?? "")) {
      segments.push(steps);
      steps = [];
      fresh = true;
    }
  }
  segments.push(steps);
  return { path: { segments }, next: end };
}

/**
 * The path after `#.` or `#(...).`, run on each element, ends at a top-level `|`. gjson
 * finds that `|` with a cruder scan (gjsonPipeSplit); where it would cut elsewhere, the
 * path means something else in KServe, so it is rejected instead of guessed.
 */
function parseEach(src: string, start: number, end: number): Parsed {
  const each = parseUntil(src, start, end, true);
  const split = gjsonPipeSplit(src, start, end);
  const gjsonEnd = split < 0 ? end : split;
  if (gjsonEnd !== each.next) {
    const where = (i: number): string => (i === end ? "at the end" : `at the '|' at offset ${i}`);
    throw new GjsonSyntaxError(
      `gjson would end the per-element path after '#.' or '#(...).' ${where(gjsonEnd)}, not ${where(each.next)}; restructure the path so the two agree`,
      Math.min(gjsonEnd, each.next),
    );
  }
  return each;
}

/** After a `.`, these start a new Get on what came before (gjson's isDotPiperChar). */
const DOT_PIPERS: ReadonlySet<string> = new Set(["@", "[", "{"]);

function describe(step: Step): string {
  if (step.kind === "query") return "a query";
  if (step.kind === "multipath") return "a multipath";
  if (step.kind === "modifier") return `@${step.name}`;
  if (step.kind === "literal") return "a literal";
  return "a key";
}

/**
 * `fresh`: gjson starts a new Get here (path start, after `|`, after a modifier, literal
 * or multipath, before `.@`/`.[`/`.{`), the only places modifiers, literals and multipaths
 * are read as such. `pipeEnds`: this (sub)path ends at a top-level `|` (see parseEach).
 */
function parseComponent(src: string, at: number, end: number, fresh: boolean, pipeEnds: boolean): Component {
  const ch = at < end ? src[at] : "";
  if (ch === "@") return parseModifier(src, at, end);
  // Elsewhere (`a.!b`) gjson reads `!b` as a key.
  if (ch === "!" && fresh) {
    const { value, next } = scanLiteral(src, at, end, pipeEnds);
    return { step: { kind: "literal", value }, next };
  }
  if (ch === "[" || ch === "{") return parseMultipath(src, at, end);
  if (ch === "#") {
    const c1 = at + 1 < end ? src[at + 1] : "";
    if (c1 === "(" || c1 === "[") return parseQuery(src, at, end);
    if (c1 === "" || c1 === "|") return { step: { kind: "count" }, next: at + 1 };
    if (c1 === ".") {
      const each = parseEach(src, at + 2, end);
      return { step: { kind: "collect", each: each.path, eachPipes: DOT_PIPERS.has(src[at + 2] ?? "") }, next: each.next };
    }
    // Anything else (`#abc`) is an ordinary key, as in gjson.
  }
  const key = scanKey(src, at, end);
  const index = /^[0-9]+$/.test(key.raw) ? Number(key.raw) : null;
  return { step: { kind: "key", text: key.text, wild: key.wild, index }, next: key.next };
}

function parseModifier(src: string, at: number, end: number): Component {
  const { name, arg, options, next } = scanModifier(src, at, end);
  // @dig's argument is a path, looked up at every depth as a Get of its own.
  const dig = name === "dig" && arg ? parsePath(src, arg[0], arg[1]) : null;
  const step: Step = { kind: "modifier", name, sortKeys: options["sortKeys"] === true, deep: options["deep"] === true, dig };
  return { step, next };
}

function parseMultipath(src: string, at: number, end: number): Component {
  const { entries, close } = scanMultipath(src, at, end);
  const shape = src[at] === "[" ? "array" : "object";
  const compiled: MultipathEntry[] = entries.map(({ name, path: [ps, pe] }) => ({
    name: shape === "array" ? null : entryName(src, name, ps, pe),
    path: parsePath(src, ps, pe),
  }));
  return { step: { kind: "multipath", shape, entries: compiled }, next: close + 1 };
}

/** gjson's key for a `{...}` entry: the given name, else the last path component, else "_". */
function entryName(src: string, name: [number, number] | null, ps: number, pe: number): string {
  if (name && name[1] > name[0]) {
    const text = src.slice(name[0], name[1]);
    if (text.startsWith('"')) {
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === "string") return parsed;
      } catch {
        // Not a JSON string: gjson uses the text as written.
      }
    }
    return text;
  }
  const last = lastComponent(src.slice(ps, pe));
  return /^[^\x00-\x1f[\]{}()#|!]*$/.test(last) ? last : "_";
}

/** The text after the last `.` or `|` not preceded by a backslash (gjson's nameOfLast). */
function lastComponent(path: string): string {
  for (let i = path.length - 1; i >= 0; i--) {
    if ((path[i] === "." || path[i] === "|") && !(i > 0 && path[i - 1] === "\\")) return path.slice(i + 1);
  }
  return path;
}

function parseQuery(src: string, at: number, end: number): Component {
  const { close, opAt } = scanQuery(src, at, end);
  const wholeKey = rejectObjectReadings(src, at, close, end);
  const cond = parseCondition(src, at + 2, opAt, close);
  let next = close + 1;
  let all = false;
  if (next < end && src[next] === "#") {
    all = true;
    next++;
  }
  if (next < end && src[next] === ".") {
    const each = parseEach(src, next + 1, end);
    const eachPipes = DOT_PIPERS.has(src[next + 1] ?? "");
    return { step: { kind: "query", cond, all, each: each.path, wholeKey, eachPipes }, next: each.next };
  }
  return { step: { kind: "query", cond, all, each: null, wholeKey, eachPipes: false }, next };
}

function parseCondition(src: string, bodyStart: number, opAt: number, close: number): Condition {
  const [ps, pe] = trimSpan(src, bodyStart, opAt < 0 ? close : opAt);
  const base = { path: parsePath(src, ps, pe), empty: ps === pe };
  if (opAt < 0) return { ...base, op: null, value: "", number: 0, tilde: null };
  const [vs, ve] = trimSpan(src, opAt, close);
  const { op, length } = readOperator(src, vs, ve);
  const [rs, re] = trimSpan(src, vs + length, ve);
  const value = readValue(src, rs, re);
  let tilde: Tilde | null = null;
  if (value.startsWith("~")) {
    // gjson checks for `~` after unquoting, so `"~x"` is a conversion too, never a string.
    const kind = value.slice(1);
    if (!TILDES.has(kind)) {
      throw new GjsonSyntaxError(`unknown conversion '${value}' (gjson has ~true, ~false, ~null and ~*)`, rs);
    }
    tilde = kind as Tilde;
  }
  return { ...base, op, value, number: goParseFloat(value), tilde };
}

/** gjson's operator table: `==` is `=`; a lone `!` or `!` before anything else is rejected. */
function readOperator(src: string, at: number, end: number): { op: QueryOp; length: number } {
  const c0 = src[at] ?? "";
  const c1 = at + 1 < end ? src[at + 1] : "";
  if (c0 === "!" && (c1 === "=" || c1 === "%")) return { op: c1 === "=" ? "!=" : "!%", length: 2 };
  if ((c0 === "<" || c0 === ">") && c1 === "=") return { op: c0 === "<" ? "<=" : ">=", length: 2 };
  if (c0 === "=" && c1 === "=") return { op: "=", length: 2 };
  if (c0 === "<" || c0 === ">" || c0 === "=" || c0 === "%") return { op: c0, length: 1 };
  // gjson would take `#(a!b)` as "a exists" and `#(a!)` as never true.
  throw new GjsonSyntaxError("expected an operator ('!=' or '!%') after '!'; escape a '!' that belongs to the key as '\\!'", at);
}

/** A quoted value is one JSON string (unquoted, unescaped); a bare value stays verbatim. */
function readValue(src: string, start: number, end: number): string {
  if (src[start] !== '"') return src.slice(start, end);
  const closeQuote = skipString(src, start, end);
  if (closeQuote !== end - 1) {
    throw new GjsonSyntaxError("unexpected characters after a quoted query value", closeQuote + 1);
  }
  const inner = src.slice(start + 1, end - 1);
  if (!inner.includes("\\")) return inner;
  try {
    return JSON.parse(`"${inner}"`) as string;
  } catch {
    throw new GjsonSyntaxError("invalid escape in a quoted query value", start);
  }
}
