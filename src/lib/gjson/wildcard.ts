/**
 * The `*` / `?` matcher gjson uses for wildcard keys and the `%` / `!%` operators
 * (github.com/tidwall/match): `*` is any run of characters, `?` exactly one character
 * (a Unicode code point, as Go decodes runes), `\c` the character c. A backslash that
 * ends the pattern matches a backslash only when a `*` comes before it: tidwall/match
 * compares the tail after the last star backwards, and otherwise fails on it.
 *
 * This is the linear two-pointer form, so there is no complexity cap; gjson gives up
 * (no match) after 10,000 steps per input character, which no realistic pattern reaches.
 */

type Token = { kind: "star" } | { kind: "one" } | { kind: "char"; cp: number } | { kind: "never" };

function tokenize(pattern: string): Token[] {
  const cps = Array.from(pattern, (c) => c.codePointAt(0) ?? 0);
  const tokens: Token[] = [];
  let sawStar = false;
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i] ?? 0;
    if (cp === 0x2a) {
      tokens.push({ kind: "star" });
      sawStar = true;
    } else if (cp === 0x3f) tokens.push({ kind: "one" });
    else if (cp === 0x5c) {
      const next = cps[i + 1];
      if (next === undefined) tokens.push(sawStar ? { kind: "char", cp } : { kind: "never" });
      else tokens.push({ kind: "char", cp: next });
      i++;
    } else tokens.push({ kind: "char", cp });
  }
  return tokens;
}

export function wildcardMatch(text: string, pattern: string): boolean {
  const s = Array.from(text, (c) => c.codePointAt(0) ?? 0);
  const p = tokenize(pattern);
  let si = 0;
  let pi = 0;
  let starP = -1;
  let starS = 0;
  while (si < s.length) {
    const t = p[pi];
    if (t && (t.kind === "one" || (t.kind === "char" && t.cp === s[si]))) {
      si++;
      pi++;
    } else if (t && t.kind === "star") {
      starP = pi++;
      starS = si;
    } else if (starP >= 0) {
      pi = starP + 1;
      si = ++starS;
    } else return false;
  }
  while (p[pi]?.kind === "star") pi++;
  return pi === p.length;
}
