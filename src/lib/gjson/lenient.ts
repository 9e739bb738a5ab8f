/**
 * gjson's Parse on arbitrary text, as `@fromstr` applies it to a string's contents.
 * gjson does not validate: it skips bytes up to ' ', then the first character decides
 * the type and a cheap scan decides the raw text. Valid JSON comes back as the parsed
 * value; anything else that gjson still reports as a value comes back as an Opaque
 * carrying gjson's raw text and compared value (for "123abc": the number 0).
 */
import { goParseFloat } from "./gofloat";
import { MISSING, Opaque } from "./value";

/** JSON's number grammar: gjson's Valid accepts exactly these. */
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const NUMBER_START = new Set(["+", "-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "i", "I", "N"]);

export function lenientParse(text: string): unknown {
  let i = 0;
  while (i < text.length && text.charCodeAt(i) <= 0x20) i++;
  if (i >= text.length) return MISSING;
  const rest = text.slice(i);
  const c = rest[0] ?? "";
  if (c === "{" || c === "[") {
    try {
      return JSON.parse(rest) as unknown;
    } catch {
      return new Opaque("json", rest, rest);
    }
  }
  // `n` starts a number (nan) unless `u` follows, as in null.
  if (NUMBER_START.has(c) || (c === "n" && rest.length > 1 && rest[1] !== "u")) return number(rest);
  if (c === "t") return word(rest, "true", true);
  if (c === "f") return word(rest, "false", false);
  if (c === "n") return word(rest, "null", null);
  if (c === '"') return string(rest);
  return MISSING;
}

/** gjson's tonum: the number runs to whitespace, `,`, `]` or `}`; ParseFloat's error is ignored. */
function number(rest: string): unknown {
  let end = 1;
  while (end < rest.length) {
    const ch = rest[end] ?? "";
    if (ch <= " " || ch === "," || ch === "]" || ch === "}") break;
    end++;
  }
  const raw = rest.slice(0, end);
  const num = goParseFloat(raw);
  return JSON_NUMBER.test(raw) ? num : new Opaque("number", raw, num);
}

/** gjson's tolit: the literal runs over lower-case letters; its type is set by the first one. */
function word(rest: string, spelling: string, value: boolean | null): unknown {
  let end = 1;
  while (end < rest.length && rest[end]! >= "a" && rest[end]! <= "z") end++;
  const raw = rest.slice(0, end);
  if (raw === spelling) return value;
  return new Opaque(value === null ? "null" : value ? "true" : "false", raw, value);
}

/** gjson's tostr: the string runs to the first unescaped quote, or to the end. */
function string(rest: string): unknown {
  let end = 1;
  while (end < rest.length) {
    const ch = rest[end];
    if (ch === "\\") end += 2;
    else if (ch === '"') break;
    else end++;
  }
  const raw = rest.slice(0, Math.min(end + 1, rest.length));
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === "string") return toWellFormed(parsed);
  } catch {
    // Not a JSON string token: gjson still returns the text it read.
  }
  return new Opaque("string", raw, unescapeLoosely(raw.slice(1, raw.endsWith('"') && raw.length > 1 ? -1 : undefined)));
}

/** gjson's unescape stops at a bad escape or a control character; JSON.parse would fail. */
function unescapeLoosely(body: string): string {
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const ch = body[i] ?? "";
    if (ch < " ") return out;
    if (ch !== "\\") {
      out += ch;
      continue;
    }
    const esc = body[++i];
    const simple = esc === undefined ? undefined : SIMPLE_ESCAPES[esc];
    if (simple !== undefined) out += simple;
    else if (esc === "u" && /^[0-9a-fA-F]{4}$/.test(body.slice(i + 1, i + 5))) {
      out += String.fromCharCode(parseInt(body.slice(i + 1, i + 5), 16));
      i += 4;
    } else return out;
  }
  return toWellFormed(out);
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/** Go encodes an unpaired surrogate as U+FFFD. */
function toWellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}
