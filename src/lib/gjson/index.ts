/**
 * GJSON path evaluation for KServe InferenceGraph conditions. KServe routes a Switch or
 * conditional step when `gjson.GetBytes(body, condition).Exists()` (tidwall/gjson v1.18);
 * this module gives the same answers over an already parsed body, so a graph behaves
 * here as it does in KServe. Paths are compiled once (at config load, where a
 * GjsonSyntaxError becomes a config error) and evaluated per request.
 *
 * Supported and rejected syntax is listed in README.md beside this file.
 */
import type { Path } from "./ast";
import { GjsonSyntaxError } from "./errors";
import { evalPath, rootValue } from "./evaluator";
import { parsePath } from "./parser";
import type { GjsonType } from "./types";
import { MISSING, Opaque, serialise, typeOf } from "./value";

export { GjsonSyntaxError };
export type { GjsonType };

export interface GjsonResult {
  exists: boolean;
  type: GjsonType | null;
  /**
   * The found value itself (not a copy); undefined when nothing was found. For text
   * gjson reads leniently (`@fromstr` on "123abc"), the value gjson compares (0).
   */
  value: unknown;
  /**
   * gjson's Raw: JSON text of the value, re-serialised (gjson returns the original
   * bytes, and @pretty's formatting, where this returns compact JSON); for leniently read
   * text, the text as gjson cut it ("123abc").
   */
  raw: string | null;
}

export interface CompiledPath {
  readonly source: string;
  readonly ast: Path;
}

/** Parses a path; throws GjsonSyntaxError for anything unsupported or malformed (never silently false). */
export function compilePath(path: string): CompiledPath {
  return { source: path, ast: parsePath(path, 0, path.length) };
}

/**
 * Evaluates against an already-parsed JSON value (JSON.parse output). `undefined` is
 * gjson's empty body: nothing is found in it, but a literal or `@keys` still yields a value.
 */
export function get(document: unknown, path: CompiledPath): GjsonResult {
  const value = evalPath(rootValue(document), path.ast);
  if (value === MISSING) return { exists: false, type: null, value: undefined, raw: null };
  return { exists: true, type: typeOf(value), value: value instanceof Opaque ? value.value : value, raw: serialise(value) };
}

/** GJSON's Result.Exists(): a value was found (JSON null, false, 0, "" all exist). */
export function exists(document: unknown, path: CompiledPath): boolean {
  return evalPath(rootValue(document), path.ast) !== MISSING;
}
