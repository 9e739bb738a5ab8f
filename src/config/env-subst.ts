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
  /** Paths (formatted) whose whole value came from one `${VAR}`: secrets, never shown. */
  secretPaths: Set<string>;
}

export function substituteVars(document: unknown, vars: Record<string, unknown>, mode: UnresolvedVars): SubstitutionResult {
  const result: SubstitutionResult = { value: undefined, errors: [], warnings: [], secretPaths: new Set() };
  const lookup = (name: string): string | undefined => {
    const value = vars[name];
    return typeof value === "string" ? value : undefined;
  };

  const visit = (node: unknown, path: PropertyKey[]): unknown => {
    if (typeof node === "string") return substituteString(node, path);
    if (Array.isArray(node)) return node.map((item, i) => visit(item, [...path, i]));
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(node)) out[key] = visit(value, [...path, key]);
      return out;
    }
    return node;
  };

  const substituteString = (text: string, path: PropertyKey[]): string => {
    if (!text.includes("${")) return text;
    const whole = WHOLE_REFERENCE.test(text);
    if (whole) result.secretPaths.add(formatPath(path));
    return text.replace(REFERENCE, (_match, name: string, fallback: string | undefined) => {
      const value = lookup(name);
      if (value !== undefined && value !== "") return value;
      if (fallback !== undefined) return fallback;
      const issue = { path: formatPath(path), message: `\${${name}} is not set and has no default` };
      if (mode === "error") {
        result.errors.push(issue);
        return "";
      }
      result.warnings.push({ ...issue, message: `\${${name}} is not set here; it must be a Worker var or secret` });
      return whole ? DEFERRED_PLACEHOLDER : "unresolved";
    });
  };

  result.value = visit(document, []);
  return result;
}
