import type { LoadOptions, LoadResult } from "./documents";
import { loadDocuments } from "./documents";
import type { ParsedDocuments } from "./yaml";

/**
 * How a config version is stored in KV (`config/versions/<id>`): its documents as
 * compact JSON, one line each, with YAML's `---` between them.
 *
 * - An isolate loading a version reads it with JSON.parse: no YAML parser runs on the
 *   way to the first routed request, and the YAML parser (js-yaml) is not even evaluated.
 * - It is still a YAML stream of the same documents, so a Worker from before this
 *   format (mid-rollout, or after a rollback) reads it unchanged.
 * - Versions published before it (YAML or JSON text as written) are parsed as YAML,
 *   as they always were.
 *
 * Publishers (`PUT /admin/config`, `switchyard push`, `switchyard serve`) parse the
 * operator's text as YAML and store only what validated, in this form.
 */

const SEPARATOR = "\n---\n"; // YAML's document marker; compact JSON never holds a raw newline

export function encodeBlob(documents: readonly unknown[]): string {
  return documents.map((document) => JSON.stringify(document)).join(SEPARATOR);
}

/** The documents of a blob in this format, or null for any other text (a version published as written). */
export function decodeBlob(text: string): unknown[] | null {
  let documents: unknown[];
  try {
    documents = text.split(SEPARATOR).map((line) => JSON.parse(line) as unknown);
  } catch {
    return null;
  }
  // Only exactly what encodeBlob writes: looser JSON (say, with a key twice, which
  // JSON.parse lets through and YAML refuses) takes the YAML path and its errors.
  if (!documents.every(isMapping) || encodeBlob(documents) !== text) return null;
  return documents;
}

export type BlobResult = (Extract<LoadResult, { ok: true }> & { blob: string }) | Extract<LoadResult, { ok: false }>;

/**
 * Validates documents as the operator wrote them (so errors name what they wrote) and,
 * if they are valid, encodes them. The blob is validated once more as readers will load
 * it, because it is what gets served: JSON has no .inf or .nan, so those become null.
 */
export function toBlob(documents: readonly unknown[], vars: Record<string, unknown>, opts: LoadOptions = {}): BlobResult {
  const written = loadDocuments(documents, vars, opts);
  if (!written.ok) return written;
  const blob = encodeBlob(documents);
  const decoded = decodeBlob(blob);
  if (decoded === null) throw new Error("encodeBlob wrote a blob that decodeBlob refuses"); // a bug, never input
  const stored = loadDocuments(decoded, vars, opts);
  return stored.ok ? { ...stored, blob } : stored;
}

/** A stored version -> validated Config; YAML is loaded only for versions published before the blob format. */
export async function loadBlob(text: string, vars: Record<string, unknown>, opts: LoadOptions = {}): Promise<LoadResult> {
  const documents = decodeBlob(text);
  if (documents !== null) return loadDocuments(documents, vars, opts);
  const parsed = await parseYaml(text);
  return parsed.ok ? loadDocuments(parsed.documents, vars, opts) : parsed;
}

/**
 * YAML (or JSON) text -> documents, with the parser loaded on first use. Worker code
 * reaches YAML only through here, so bundlers keep js-yaml out of the startup path:
 * esbuild (wrangler, switchyard serve) wraps it in a function run on first import.
 */
export async function parseYaml(text: string): Promise<ParsedDocuments> {
  const { parseYamlDocuments } = await import("./yaml");
  return parseYamlDocuments(text);
}

function isMapping(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
