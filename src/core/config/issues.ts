import { en } from "zod/locales";
import type * as z from "zod/mini";

/** One problem in a config document, named by where it is (`pools.gpu.replicas[1].weight`). */
export interface ConfigIssue {
  path: string;
  message: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Renders a path the way a reader would write it: dots for keys, brackets for indices. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (typeof part === "string" && IDENTIFIER.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(String(part))}]`;
  }
  return out === "" ? "(document)" : out;
}

export function joinPath(prefix: readonly PropertyKey[], rest: readonly PropertyKey[]): PropertyKey[] {
  return [...prefix, ...rest];
}

/**
 * What every config parse hands zod: the input on each issue, so `describe` can say what
 * it got, and zod's English messages, which zod/mini leaves out to stay small. They are
 * the fallback for issue codes `describe` does not word itself ("Invalid key in record").
 */
export const PARSE_PARAMS: z.core.ParseContext<z.core.$ZodIssue> = { reportInput: true, error: en().localeError };

/** Zod's messages are written for developers; these are written for people editing YAML. */
function describe(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      // Where a string belongs (a key, a token, a name), a number given is not echoed either: an all-digit secret left unquoted in YAML is one.
      return issue.input === undefined ? "is required" : `must be ${article(issue.expected)}, got ${kindOf(issue.input, issue.expected !== "string")}`;
    case "too_small":
      if (issue.origin === "array") return `must have at least ${issue.minimum} item${issue.minimum === 1 ? "" : "s"}`;
      if (issue.origin === "string") return "must not be empty";
      return `must be ${issue.inclusive === false ? ">" : ">="} ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "array") return `must have at most ${issue.maximum} items`;
      return `must be ${issue.inclusive === false ? "<" : "<="} ${issue.maximum}`;
    case "unrecognized_keys":
      return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`;
    case "invalid_key":
      // A record key's own rule (a name's characters) says more than zod's "Invalid key in record".
      return issue.issues.length > 0 ? issue.issues.map((inner) => describe(inner as z.core.$ZodIssue)).join("; ") : issue.message;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    default:
      return issue.message;
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** What was given instead. Strings are never echoed: one may be a secret, or hold one; other values only when `echo`. */
function kindOf(value: unknown, echo = true): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") return "a string";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value); // JSON would write NaN and Infinity as null
  return echo ? `${typeof value} ${JSON.stringify(value)}`.slice(0, 60) : article(typeof value);
}

export function fromZod(error: z.core.$ZodError, prefix: readonly PropertyKey[] = []): ConfigIssue[] {
  const issues = error.issues.map((issue) => ({ path: formatPath(joinPath(prefix, issue.path)), message: describe(issue), safeInteger: issue.code === "too_big" && issue.origin === "int" }));
  // z.int()'s own safe-integer bound only repeats a field's tighter bound (./bounds.ts) when both fail.
  const otherwise = new Set(issues.filter((i) => !i.safeInteger).map((i) => i.path));
  return issues.filter((i) => !(i.safeInteger && otherwise.has(i.path))).map(({ path, message }) => ({ path, message }));
}

export function sortIssues(issues: ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
