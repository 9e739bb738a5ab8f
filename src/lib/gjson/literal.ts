/**
 * GJSON literals (`!true`, `!"text"`, `!12`, `!{...}`, `![...]`): a value written into
 * the path, recognised where gjson starts a new Get (the start of a path, after `|`,
 * after a modifier, literal or multipath, at the start of a `#.`/`#(...).` path or of a
 * multipath entry). gjson v1.18 (execStatic) reads `{`, `[`, `"`, a sign or a digit as
 * the start of a JSON value and cuts it with parseSquash; anything else is a word up to
 * the next `.` or `|`. Its reading of several spellings is surprising (`!TRUE` is
 * nothing, `!Null` is the number 0, `!5|x` is one number text "5|x" that parses as 0,
 * `!"a"|x` ignores `|x`), so only the spellings below are accepted and the rest fail at
 * config load.
 */
import { GjsonSyntaxError } from "./errors";
import { skipString, squashEnd } from "./lexer";

export interface LiteralScan {
  value: unknown;
  /** Index after the literal: `end`, or a `.`/`|` that continues the path. */
  next: number;
}

const WORDS: ReadonlyMap<string, unknown> = new Map<string, unknown>([
  ["true", true],
  ["false", false],
  ["null", null],
]);

/** A number gjson's Parse reads exactly as written (optional `+`, then JSON's grammar). */
const PLAIN_NUMBER = /^[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** Code points gjson's unescape turns into U+FFFD where JSON.parse keeps them. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * `src[at]` is `!`. `pipeEnds`: a `|` ends the current path here (gjson already cut a
 * `#.`/`#(...).` path at that `|` before reading it), so a literal may stop there.
 */
export function scanLiteral(src: string, at: number, end: number, pipeEnds: boolean): LiteralScan {
  const c = src[at + 1] ?? "";
  if (c === "{" || c === "[") return jsonLiteral(src, at, end);
  if (c === '"') return stringLiteral(src, at, end, pipeEnds);
  if (c === "+" || c === "-" || (c >= "0" && c <= "9")) return numberLiteral(src, at, end, pipeEnds);
  return wordLiteral(src, at, end);
}

function jsonLiteral(src: string, at: number, end: number): LiteralScan {
  const close = squashEnd(src, at + 1, end);
  if (close < 0) throw new GjsonSyntaxError(`unclosed literal: missing '${src[at + 1] === "{" ? "}" : "]"}'`, at);
  const value = parseJsonText(src.slice(at + 1, close + 1), at);
  const next = close + 1;
  // gjson ignores anything after the literal that is not `.` or `|`.
  if (next < end && src[next] !== "." && src[next] !== "|") {
    throw new GjsonSyntaxError(`unexpected '${src[next] ?? ""}' after a literal; expected '.', '|' or the end`, next);
  }
  return { value, next };
}

function stringLiteral(src: string, at: number, end: number, pipeEnds: boolean): LiteralScan {
  const close = skipString(src, at + 1, end);
  const next = close + 1;
  if (next < end && !(pipeEnds && src[next] === "|")) {
    throw new GjsonSyntaxError("a string literal must end the path: gjson ignores everything after it", next);
  }
  const token = src.slice(at + 1, next);
  // gjson's parseSquash does not treat the opening quote as one: a closing bracket inside
  // the string ends the literal there.
  if (/[\]})]/.test(token)) {
    throw new GjsonSyntaxError("a string literal containing ')', ']' or '}' is cut short by gjson", at);
  }
  const value = parseJsonText(token, at);
  if (typeof value !== "string") throw new GjsonSyntaxError("invalid string literal", at);
  return { value, next };
}

function numberLiteral(src: string, at: number, end: number, pipeEnds: boolean): LiteralScan {
  // gjson reads the number up to the end of the path, `|` and `.` included.
  let stop = end;
  if (pipeEnds) {
    const bar = src.indexOf("|", at);
    if (bar >= 0 && bar < end) stop = bar;
  }
  const text = src.slice(at + 1, stop);
  if (!PLAIN_NUMBER.test(text)) {
    throw new GjsonSyntaxError(`number literal '!${text}' is not a plain number ending the path (gjson would read the whole text as one number)`, at);
  }
  return { value: Number(text), next: stop };
}

function wordLiteral(src: string, at: number, end: number): LiteralScan {
  let next = at + 1;
  while (next < end && src[next] !== "." && src[next] !== "|") next++;
  const word = src.slice(at + 1, next);
  if (WORDS.has(word)) return { value: WORDS.get(word), next };
  const lower = word.toLowerCase();
  if (WORDS.has(lower) || lower === "nan" || lower === "inf") {
    throw new GjsonSyntaxError(`literal '!${word}' is not supported (gjson reads it as nothing or as a number); write !true, !false or !null`, at);
  }
  throw new GjsonSyntaxError(`unknown literal '!${word}' (gjson has !true, !false, !null, !"text", !number, !{...}, ![...]); write '\\!' for a key that starts with '!'`, at);
}

function parseJsonText(text: string, at: number): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new GjsonSyntaxError("literal is not valid JSON", at);
  }
  if (hasLoneSurrogate(value)) {
    throw new GjsonSyntaxError("literal has an unpaired \\u surrogate escape, which gjson decodes differently", at);
  }
  return value;
}

function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).some(([k, v]) => LONE_SURROGATE.test(k) || hasLoneSurrogate(v));
  }
  return false;
}
