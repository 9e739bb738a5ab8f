/**
 * Character-level scanning of GJSON path text. Each scanner finds where a construct
 * ends the way gjson v1.18 does (`parseQuery`, `parseSubSelectors`, `parseObjectPath`),
 * so that a path splits into the same pieces here as it does in KServe's router; it is
 * stricter only where gjson would quietly read a malformed path as something else.
 */
import { GjsonSyntaxError } from "./errors";

/** gjson trims query parts of every byte <= ' ', control characters included. */
export function trimSpan(src: string, start: number, end: number): [number, number] {
  let s = start;
  let e = end;
  while (s < e && src.charCodeAt(s) <= 0x20) s++;
  while (e > s && src.charCodeAt(e - 1) <= 0x20) e--;
  return [s, e];
}

/** `src[at]` is `"`; returns the index of the closing quote, skipping `\x` pairs. */
export function skipString(src: string, at: number, end: number): number {
  for (let i = at + 1; i < end; i++) {
    const ch = src[i];
    if (ch === "\\") i++;
    else if (ch === '"') return i;
  }
  throw new GjsonSyntaxError("unclosed string", at);
}

const CLOSER: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

function popCloser(stack: string[], ch: string, at: number, what: string): void {
  const want = stack.pop();
  // gjson balances (, [ and { against any closer; a mismatch is almost surely a typo.
  if (want !== ch) throw new GjsonSyntaxError(`mismatched '${ch}' in ${what} (expected '${want ?? ""}')`, at);
}

export interface QueryScan {
  /** Index of the `)` (or `]`) that closes the query. */
  close: number;
  /** Index of the first operator character at the query's own depth, or -1. */
  opAt: number;
}

/**
 * `src[at]` is `#` and `src[at+1]` is `(` or `[`. The first `!`, `=`, `<`, `>` or `%`
 * outside nested brackets starts the operator, as in gjson: that is why `#(nets.#(=="fb"))`
 * is an existence test on a nested query, and why a key with one of these characters has
 * to escape it.
 */
export function scanQuery(src: string, at: number, end: number): QueryScan {
  const stack = [CLOSER[src[at + 1] ?? ""] ?? ")"];
  let opAt = -1;
  for (let i = at + 2; i < end; i++) {
    const ch = src[i] ?? "";
    if (stack.length === 1 && opAt < 0 && "!=<>%".includes(ch)) {
      opAt = i;
      continue;
    }
    if (ch === "\\") i++;
    else if (ch === "(" || ch === "[") stack.push(CLOSER[ch] ?? "");
    else if (ch === ")" || ch === "]") {
      popCloser(stack, ch, i, "query");
      if (stack.length === 0) return { close: i, opAt };
    } else if (ch === '"') i = skipString(src, i, end);
  }
  throw new GjsonSyntaxError(`unclosed query: missing '${stack[0] ?? ")"}'`, at);
}

export interface EntrySpan {
  /** Text before the first top-level `:`, or null when there is none. */
  name: [number, number] | null;
  path: [number, number];
}

export interface MultipathScan {
  entries: EntrySpan[];
  /** Index of the closing `]` or `}`. */
  close: number;
}

/**
 * `src[at]` is `[` or `{`. Entries split at top-level commas; the first top-level colon
 * of an entry ends its name unless a modifier (`.@` or `|@`) came first, whose argument
 * may hold colons (gjson's rule, kept so entries split identically).
 */
export function scanMultipath(src: string, at: number, end: number): MultipathScan {
  const stack = [CLOSER[src[at] ?? ""] ?? "]"];
  const entries: EntrySpan[] = [];
  let start = at + 1;
  let colon = -1;
  let sawModifier = false;
  const push = (i: number): void => {
    entries.push(colon < 0 ? { name: null, path: [start, i] } : { name: [start, colon], path: [colon + 1, i] });
    start = i + 1;
    colon = -1;
    sawModifier = false;
  };
  for (let i = at + 1; i < end; i++) {
    const ch = src[i] ?? "";
    if (ch === "\\") i++;
    else if (ch === "@") {
      if (src[i - 1] === "." || src[i - 1] === "|") sawModifier = true;
    } else if (ch === ":") {
      if (!sawModifier && colon < 0 && stack.length === 1) colon = i;
    } else if (ch === ",") {
      if (stack.length === 1) push(i);
    } else if (ch === '"') i = skipString(src, i, end);
    else if (ch === "(" || ch === "[" || ch === "{") stack.push(CLOSER[ch] ?? "");
    else if (ch === ")" || ch === "]" || ch === "}") {
      popCloser(stack, ch, i, "multipath");
      if (stack.length === 0) {
        push(i);
        return { entries, close: i };
      }
    }
  }
  throw new GjsonSyntaxError(`unclosed multipath: missing '${stack[0] ?? "]"}'`, at);
}

export interface KeyScan {
  text: string;
  wild: boolean;
  raw: string;
  /** Index of the `.` or `|` that ends the key, or `end`. */
  next: number;
}

/** A plain key runs to the next unescaped `.` or `|`; `\x` stands for x. */
export function scanKey(src: string, at: number, end: number): KeyScan {
  let text = "";
  let wild = false;
  let i = at;
  while (i < end) {
    const ch = src[i] ?? "";
    if (ch === "." || ch === "|") break;
    if (ch === "\\") {
      // gjson drops a trailing lone backslash; reject it rather than guess the intent.
      if (i + 1 >= end) throw new GjsonSyntaxError("dangling '\\' at the end of a key", i);
      text += src[i + 1];
      i += 2;
      continue;
    }
    if (ch === "*" || ch === "?") wild = true;
    text += ch;
    i++;
  }
  return { text, wild, raw: src.slice(at, i), next: i };
}

/**
 * Where gjson's splitPossiblePipe cuts the path after `#.` or `#(...).` into the part run
 * per element and the part run on the result: an absolute index of a `|`, or -1. It only
 * balances brackets of a query written right after a `.`, and a multipath only when the
 * path starts with `{`, so a `|` elsewhere inside brackets cuts the path there; the parser
 * compares this with its own reading and rejects a path where the two disagree.
 */
export function gjsonPipeSplit(src: string, start: number, end: number): number {
  const bar = src.indexOf("|", start);
  if (bar < 0 || bar >= end) return -1;
  if (src[start] === "{") {
    const close = squashEnd(src, start + 1, end);
    return close >= 0 && close + 1 < end && src[close + 1] === "|" ? close + 1 : -1;
  }
  for (let i = start; i < end; i++) {
    const ch = src[i];
    if (ch === "\\") i++;
    else if (ch === "|") return i;
    else if (ch === "." && i + 1 < end && src[i + 1] === "#") {
      i += 2;
      if (i >= end) return -1;
      const open = src[i];
      if (open !== "(" && open !== "[") continue;
      const close = open === "(" ? ")" : "]";
      let depth = 1;
      for (i++; i < end; i++) {
        const c = src[i];
        if (c === "\\") i++;
        else if (c === open) depth++;
        else if (c === close) {
          if (--depth === 0) break;
        } else if (c === '"') {
          for (i++; i < end && src[i] !== '"'; i++) if (src[i] === "\\") i++;
        }
      }
    } else if (ch === "." && i === end - 1) return -1;
  }
  return -1;
}

/**
 * gjson's squash on `src[at, end)`: the index of the `}`, `]` or `)` that closes the
 * bracket at `at` (any closer closes any opener, as in gjson), or of the quote that ends
 * a string starting at `at`; -1 when the text runs out first. Strings inside are skipped.
 * (splitPossiblePipe calls it on the text after a `{`, so there the first character is
 * taken as already opened.) Modifier arguments and literals end where it ends.
 */
export function squashEnd(src: string, at: number, end: number): number {
  if (at >= end) return -1;
  let depth = src[at] === '"' ? 0 : 1;
  for (let i = src[at] === '"' ? at : at + 1; i < end; i++) {
    const ch = src[i];
    if (ch === '"') {
      for (i++; i < end; i++) {
        if (src[i] === '"' && !oddBackslashesBefore(src, i, at)) break;
      }
      if (depth === 0) return i < end ? i : -1;
    } else if (ch === "{" || ch === "[" || ch === "(") depth++;
    else if (ch === "}" || ch === "]" || ch === ")") {
      if (--depth === 0) return i;
    }
  }
  return -1;
}

function oddBackslashesBefore(src: string, i: number, floor: number): boolean {
  let n = 0;
  for (let j = i - 1; j >= floor && src[j] === "\\"; j--) n++;
  return n % 2 === 1;
}
