/**
 * How gjson reads a query when it meets an object instead of an array: it does not run
 * the query but reads its text as an object key, cut at the first `.` or `|` (a `\`
 * escapes; quotes mean nothing there). The key is absent in practice, so the result is
 * nothing, except that a `|` cut makes gjson run the text after it as a path on nothing,
 * and `.@x` runs @x on nothing. Most paths yield nothing on nothing; a literal and the
 * modifiers @keys, @values, @tostr and @dig yield a value, so a query whose text holds
 * one of those after a cut would exist on an object. Those are rejected.
 */
import { GjsonSyntaxError } from "./errors";

/** Modifiers whose output on nothing is something (`[]`, `""`, a dig result). */
const PRODUCERS: ReadonlySet<string> = new Set(["keys", "values", "tostr", "dig"]);
/** What follows `!` when gjson reads a JSON literal (execStatic). */
const LITERAL_START = /^[{["+\-0-9]/;
const LITERAL_WORDS: ReadonlySet<string> = new Set(["true", "false", "null", "nan", "inf"]);

/**
 * `src[at, close]` is a query `#(...)`; `end` is where the whole path ends (gjson's cut
 * runs into the rest of the path). Returns true when no `.` or `|` cuts the text, so the
 * whole query is one key; throws for a cut after which gjson would find a value.
 */
export function rejectObjectReadings(src: string, at: number, close: number, end: number): boolean {
  let whole = true;
  for (let i = at; i <= close; i++) {
    const ch = src[i];
    if (ch === "\\") {
      i++;
      continue;
    }
    if (ch !== "." && ch !== "|") continue;
    whole = false;
    if (yieldsOnNothing(src, i + 1, end, ch === "|")) {
      throw new GjsonSyntaxError(
        `'${ch}${src[i + 1] ?? ""}' inside a query: on an object gjson reads the query as a key and runs the rest after '${ch}' on nothing, which yields a value; restructure the path`,
        i,
      );
    }
  }
  return whole;
}

/** Would gjson, running `src[from, end)` as a path on nothing, find something? */
function yieldsOnNothing(src: string, from: number, end: number, afterPipe: boolean): boolean {
  const c = src[from];
  if (c === "@") return PRODUCERS.has(word(src, from + 1, end, ":"));
  // After `.`, gjson reads `!` as part of a key (no new Get starts there).
  if (c === "!" && afterPipe) {
    return LITERAL_START.test(src.slice(from + 1, from + 2)) || LITERAL_WORDS.has(word(src, from + 1, end, "").toLowerCase());
  }
  return false;
}

/** The text from `from` up to the next `.` or `|` (or `extra`), as gjson cuts a name. */
function word(src: string, from: number, end: number, extra: string): string {
  let i = from;
  while (i < end && src[i] !== "." && src[i] !== "|" && (extra === "" || src[i] !== extra)) i++;
  return src.slice(from, i);
}
