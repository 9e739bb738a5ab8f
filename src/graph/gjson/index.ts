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
import { MISSING } from "./value";

export { GjsonSyntaxError };

export type GjsonType = "null" | "false" | "true" | "number" | "string" | "json"; // json = object/array

export interface GjsonResult {
  exists: boolean;
  type: GjsonType | null;
  /** The found value itself (not a copy); undefined when nothing was found. */
  value: unknown;
  /** JSON text of the value, re-serialised (gjson would return the original bytes). */
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

/** Evaluates against an already-parsed JSON value (JSON.parse output). */
export function get(document: unknown, path: CompiledPath): GjsonResult {
  const root = rootValue(document);
  const value = root === MISSING ? MISSING : evalPath(root, path.ast);
  if (value === MISSING) return { exists: false, type: null, value: undefined, raw: null };
  return { exists: true, type: typeOf(value), value, raw: rawOf(value) };
}

/** GJSON's Result.Exists(): a value was found (JSON null, false, 0, "" all exist). */
export function exists(document: unknown, path: CompiledPath): boolean {
  const root = rootValue(document);
  return root !== MISSING && evalPath(root, path.ast) !== MISSING;
}

function typeOf(value: unknown): GjsonType {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "number") return "number";
  if (typeof value === "string") return "string";
  return "json";
}

function rawOf(value: unknown): string {
  // JSON has no Infinity or NaN, but JSON.parse("1e400") yields Infinity.
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  return JSON.stringify(value);
}
