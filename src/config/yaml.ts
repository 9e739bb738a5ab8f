import { parseAllDocuments } from "yaml";
import type { ConfigIssue } from "./issues";

/**
 * YAML (or JSON) text -> its documents. The only module that imports the `yaml` package:
 * the Worker reaches it through `import()` (see ./blob.ts), so an isolate that only ever
 * loads stored blobs never runs it.
 */

export const MAX_ALIAS_COUNT = 100; // expanded aliases per document; bounds billion-laughs blow-ups

export type ParsedDocuments = { ok: true; documents: unknown[] } | { ok: false; errors: ConfigIssue[] };

/** Every non-empty document of a YAML stream (JSON is one YAML document); each must be a mapping. */
export function parseYamlDocuments(text: string): ParsedDocuments {
  if (text.trim() === "") return { ok: false, errors: [{ path: "(document)", message: "is empty" }] };
  const documents = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(documents)) {
    return { ok: false, errors: [{ path: "(document)", message: "is not a YAML stream" }] };
  }
  const errors: ConfigIssue[] = [];
  const values: unknown[] = [];
  documents.forEach((doc, i) => {
    const where = documents.length > 1 ? `documents[${i}]` : "(document)";
    for (const error of doc.errors) errors.push({ path: where, message: error.message.split("\n")[0] ?? "invalid YAML" });
    if (doc.errors.length > 0) return;
    const value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    if (value === null || value === undefined) return;
    if (typeof value !== "object" || Array.isArray(value)) errors.push({ path: where, message: "must be a mapping at the top level" });
    else values.push(value);
  });
  if (errors.length > 0) return { ok: false, errors };
  if (values.length === 0) return { ok: false, errors: [{ path: "(document)", message: "is empty" }] };
  return { ok: true, documents: values };
}
