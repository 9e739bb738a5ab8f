import { parseAllDocuments } from "yaml";
import type { ConfigIssue } from "./issues";

/**
 * YAML (or JSON) text -> its documents. The only module that imports the `yaml` package:
 * the Worker reaches it through `import()` (see ./blob.ts), so an isolate that only ever
 * loads stored blobs never runs it.
 */

/**
 * Bounds on what a YAML document may expand to, so an alias bomb ("billion laughs":
 * anchors of aliases of anchors) is a config error, not an exhausted isolate.
 * - MAX_ALIAS_COUNT: the `yaml` package's own `maxAliasCount` (its default, made
 *   explicit): an alias counts once per alias inside what it points at, and a document
 *   whose aliases add up to more is refused while it is being expanded.
 * - MAX_EXPANDED_CHARS: the expanded document, counted as JSON characters. A few
 *   aliases of one large node stay under the alias count yet would store as many copies;
 *   a real config is a few KiB, PUT /admin/config takes at most 1 MiB of text.
 */
export const MAX_ALIAS_COUNT = 100;
export const MAX_EXPANDED_CHARS = 4 * 1024 * 1024;

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
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (error) {
      errors.push({ path: where, message: expansionError(error) });
      return;
    }
    if (exceedsExpandedSize(value, MAX_EXPANDED_CHARS)) {
      errors.push({ path: where, message: `is more than ${MAX_EXPANDED_CHARS} characters once its aliases are expanded` });
      return;
    }
    if (value === null || value === undefined) return;
    if (typeof value !== "object" || Array.isArray(value)) errors.push({ path: where, message: "must be a mapping at the top level" });
    else values.push(value);
  });
  if (errors.length > 0) return { ok: false, errors };
  if (values.length === 0) return { ok: false, errors: [{ path: "(document)", message: "is empty" }] };
  return { ok: true, documents: values };
}

function expansionError(error: unknown): string {
  const message = error instanceof Error ? error.message : "";
  if (/excessive alias count/i.test(message)) return `expands more than ${MAX_ALIAS_COUNT} aliases: anchors and aliases nested to multiply (a "billion laughs" alias bomb) are refused`;
  if (/unresolved alias/i.test(message)) return message.split("\n")[0]!; // names the alias, as written
  return "cannot be read as data";
}

/**
 * Whether `value`, written out as JSON, would exceed `budget` characters (roughly: keys
 * and strings by their length, other values by a few). Shared subtrees (aliases) count
 * once per place they appear, and the walk stops as soon as the budget is spent, so its
 * cost is bounded by the budget, not by the expansion.
 */
export function exceedsExpandedSize(value: unknown, budget: number): boolean {
  let left = budget;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      left -= 2 + node.length;
      if (left < 0) return true;
      for (const item of node) stack.push(item);
    } else if (node !== null && typeof node === "object") {
      for (const [key, item] of Object.entries(node)) {
        left -= key.length + 4;
        stack.push(item);
      }
      left -= 2;
    } else left -= typeof node === "string" ? node.length + 2 : 8;
    if (left < 0) return true;
  }
  return false;
}
