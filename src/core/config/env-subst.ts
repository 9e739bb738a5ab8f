import type { ConfigIssue } from "./issues";
import { formatPath } from "./issues";

/**
 * `${VAR}` and `${VAR:-default}` in string values, resolved from the Worker's env
 * (vars and secrets). Errors name the variable and where it was used, never a value.
 */

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$/;

/**
 * "error": a reference with no value and no default is an issue (the Worker).
 * "defer": it stands in as a placeholder and a warning (the CLI, which cannot see secrets).
 */
export type UnresolvedVars = "error" | "defer";

/** Placeholder for a deferred reference that is the whole value; it parses as a URL, so URL fields still validate. */
export const DEFERRED_PLACEHOLDER = "http://unresolved.invalid";

export interface SubstitutionResult {
  value: unknown;
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  /** Paths (formatted) whose whole value is one `${VAR}` reference -> the variable's name: secrets, never shown. */
  secretPaths: Map<string, string>;
  /** Paths whose whole value is one `${VAR:-default}` -> the default as written (a client key's must not be a raw key). */
  defaults: Map<string, string>;
  /** Paths (formatted) of every string holding a `${VAR}` reference, resolved or not -> the first variable's name. */
  references: Map<string, string>;
  /** Every value taken from the env -> the name of a variable it came from. Defaults are config text, not listed. */
  envValues: Map<string, string>;
  /**
   * Each resolved string that holds an env value -> the same string as written, with each
   * env value shown as its `${VAR}` (a default that was used shows as itself).
   */
  written: Map<string, string>;
}

export function substituteVars(document: unknown, vars: Record<string, unknown>, mode: UnresolvedVars): SubstitutionResult {
  const result: SubstitutionResult = { value: undefined, errors: [], warnings: [], secretPaths: new Map(), defaults: new Map(), references: new Map(), envValues: new Map(), written: new Map() };
  const lookup = (name: string): string | undefined => {
    const value = vars[name];
    return typeof value === "string" ? value : undefined;
  };

  const visit = (node: unknown, path: PropertyKey[]): unknown => {
    if (typeof node === "string") return substituteString(node, path);
    if (Array.isArray(node)) return node.map((item, i) => visit(item, [...path, i]));
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(node)) {
        // Assigned, it would replace the object's prototype and vanish: a model or pool of that name would be dropped unseen.
        if (key === "__proto__") result.errors.push({ path: formatPath([...path, key]), message: '"__proto__" cannot be a name' });
        else out[key] = visit(value, [...path, key]);
      }
      return out;
    }
    return node;
  };

  const substituteString = (text: string, path: PropertyKey[]): string => {
    if (!text.includes("${")) return text;
    // `${UP-KEY}`, `${KEY` or `${X:?e}` matches no reference; used as literal text it would go upstream as a key.
    // A default holding a reference (`${A:-${B}}`) is not nested substitution: REFERENCE's default ends at the first `}`.
    if (text.replace(REFERENCE, "").includes("${") || [...text.matchAll(REFERENCE)].some((m) => m[2]?.includes("${"))) {
      result.errors.push({ path: formatPath(path), message: "holds a ${ that starts no reference: write ${NAME} or ${NAME:-default}, NAME being letters, digits and _ not starting with a digit, and a default without ${ (references do not nest)" });
      return text;
    }
    const whole = WHOLE_REFERENCE.exec(text);
    if (whole) result.secretPaths.set(formatPath(path), whole[1]!);
    if (whole?.[2]) result.defaults.set(formatPath(path), whole[2]);
    const first = new RegExp(REFERENCE.source).exec(text);
    if (first) result.references.set(formatPath(path), first[1]!);
    let fromEnv = false;
    let display = "";
    let last = 0;
    const resolved = text.replace(REFERENCE, (match, name: string, fallback: string | undefined, offset: number) => {
      display += text.slice(last, offset);
      last = offset + match.length;
      const value = lookup(name);
      if (value !== undefined && value !== "") {
        fromEnv = true;
        result.envValues.set(value, name);
        display += `\${${name}}`;
        return value;
      }
      if (fallback !== undefined) {
        display += fallback;
        return fallback;
      }
      display += `\${${name}}`;
      const issue = { path: formatPath(path), message: `\${${name}} is not set and has no default` };
      if (mode === "error") {
        result.errors.push(issue);
        return "";
      }
      result.warnings.push({ ...issue, message: `\${${name}} is not set here; it must be a Worker var or secret` });
      return whole ? DEFERRED_PLACEHOLDER : "unresolved";
    });
    if (fromEnv) result.written.set(resolved, display + text.slice(last));
    return resolved;
  };

  result.value = visit(document, []);
  return result;
}
