/**
 * Go's strconv.ParseFloat(s, 64) as gjson uses it to compare a number in the document
 * with a query value: the error is ignored, so anything that is not a Go float literal
 * reads as 0 (`#(age>abc)` is `age > 0`), overflow reads as ±Inf, and Go syntax that JSON
 * lacks is accepted: `1_000`, `0x1p4`, `Inf`, `NaN`.
 */

const DECIMAL = /^[+-]?(?:[0-9_]*)(?:\.[0-9_]*)?(?:[eE][+-]?[0-9][0-9_]*)?$/;
const HEX = /^([+-]?)0[xX]([0-9a-fA-F_]*)(?:\.([0-9a-fA-F_]*))?[pP]([+-]?[0-9][0-9_]*)$/;

export function goParseFloat(s: string): number {
  const special = parseSpecial(s);
  if (special !== undefined) return special;
  const hex = HEX.exec(s);
  if (hex) return parseHex(s, hex);
  if (!DECIMAL.test(s) || !/[0-9]/.test(s.replace(/[eE].*$/, ""))) return 0;
  if (s.includes("_") && !underscoreOk(s)) return 0;
  return Number(s.replaceAll("_", ""));
}

/** "inf" and "infinity" with an optional sign, "nan" without one, in any case. */
function parseSpecial(s: string): number | undefined {
  const signed = s.startsWith("+") || s.startsWith("-");
  const body = (signed ? s.slice(1) : s).toLowerCase();
  if (body === "inf" || body === "infinity") return s.startsWith("-") ? -Infinity : Infinity;
  if (!signed && body === "nan") return NaN;
  return undefined;
}

/** A hexadecimal mantissa needs a binary exponent (`0x10` is a syntax error, so 0). */
function parseHex(s: string, m: RegExpExecArray): number {
  if (s.includes("_") && !underscoreOk(s)) return 0;
  const int = (m[2] ?? "").replaceAll("_", "");
  const frac = (m[3] ?? "").replaceAll("_", "");
  if (int === "" && frac === "") return 0;
  const mantissa = Number(BigInt(`0x${int}${frac}`));
  const exponent = Number((m[4] ?? "0").replaceAll("_", "")) - 4 * frac.length;
  const value = mantissa * 2 ** exponent;
  return m[1] === "-" ? -value : value;
}

/** Go's underscoreOK: `_` only between digits, or between a base prefix and a digit. */
function underscoreOk(s: string): boolean {
  let rest = s;
  if (rest.startsWith("+") || rest.startsWith("-")) rest = rest.slice(1);
  let saw = "^";
  let i = 0;
  let hex = false;
  if (rest.length >= 2 && rest[0] === "0" && "bBoOxX".includes(rest[1] ?? "")) {
    i = 2;
    saw = "0";
    hex = rest[1] === "x" || rest[1] === "X";
  }
  for (; i < rest.length; i++) {
    const c = rest[i] ?? "";
    if ((c >= "0" && c <= "9") || (hex && /[a-fA-F]/.test(c))) {
      saw = "0";
      continue;
    }
    if (c === "_") {
      if (saw !== "0") return false;
      saw = "_";
      continue;
    }
    if (saw === "_") return false;
    saw = "!";
  }
  return saw !== "_";
}
