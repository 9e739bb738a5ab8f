import { CORE_SCHEMA, loadAll, YAMLException } from "js-yaml";
import type { ConfigIssue } from "./issues";

/**
 * YAML (or JSON) text -> its documents. The only module that imports the `js-yaml` package:
 * the Worker reaches it through `import()` (see ./blob.ts), so an isolate that only ever
 * loads stored blobs never runs it.
 *
 * YAML 1.2's core schema (js-yaml's CORE_SCHEMA): `yes`/`on` and dates stay strings, no
 * `<<` merge keys, and a tag outside the core schema (`!!binary`, `!foo`) is an error. A
 * key written twice in one mapping is an error. Collections may nest at most 100 deep
 * (js-yaml's `maxDepth`).
 */

/**
 * Bounds on what a YAML document may expand to, so an alias bomb ("billion laughs":
 * anchors of aliases of anchors) is a config error, not an exhausted isolate. js-yaml
 * does not copy an aliased mapping or list: every alias of it is the same object. So
 * parsing stays as small as the text, and the bounds are checked on the parsed value
 * before anything (validation, `JSON.stringify`) walks it out in full.
 * - MAX_ALIAS_COUNT: aliases of mappings and lists, counted in the expanded document:
 *   an alias counts once, plus once for every alias inside what it points at, each time
 *   it appears (nine aliases of a node that holds nine aliases count 90). An alias of a
 *   scalar is just that scalar again; MAX_EXPANDED_CHARS bounds those.
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
  let documents: unknown[];
  let completed = 0; // documents js-yaml had finished when it stopped on an error
  try {
    documents = loadAll(text, null, {
      schema: CORE_SCHEMA,
      // js-yaml's parser state keeps the documents read so far; only read on an error.
      listener: (_event, state) => void (completed = (state as { documents?: unknown[] }).documents?.length ?? 0),
    });
  } catch (error) {
    return { ok: false, errors: [syntaxError(error, text, completed)] };
  }
  const errors: ConfigIssue[] = [];
  const values: unknown[] = [];
  documents.forEach((value, i) => {
    const where = documents.length > 1 ? `documents[${i}]` : "(document)";
    if (exceedsAliasCount(value, MAX_ALIAS_COUNT)) {
      errors.push({ path: where, message: `expands more than ${MAX_ALIAS_COUNT} aliases: anchors and aliases nested to multiply (a "billion laughs" alias bomb) are refused` });
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

/**
 * js-yaml stops at the first error. Its reason and place, as "<reason> at line L, column C",
 * at the document it is in: `documents[i]` when the stream holds more than one (one was
 * finished before it, or another starts after it), else `(document)`.
 */
function syntaxError(error: unknown, text: string, completed: number): ConfigIssue {
  if (!(error instanceof YAMLException)) return { path: "(document)", message: "cannot be read as YAML" };
  const mark = error.mark as { line: number; column: number; position: number } | undefined;
  const message = mark ? `${error.reason} at line ${mark.line + 1}, column ${mark.column + 1}` : error.reason;
  const more = mark !== undefined && /^---(?:[ \t\r\n]|$)/m.test(text.slice(mark.position));
  return { path: completed > 0 || more ? `documents[${completed}]` : "(document)", message };
}

/**
 * Whether the aliases of mappings and lists in `value`, counted in its expanded form
 * (see MAX_ALIAS_COUNT), add up to more than `limit`. js-yaml hands an alias the very
 * object its anchor made, so an object met a second time is an alias of it. Each object
 * is walked once (the count inside it is kept), so the cost is that of the parsed
 * document, not of its expansion, and the walk keeps its own stack. Objects are met in
 * key order, the text's order but for integer-like keys (JavaScript puts those first);
 * either way every appearance of an object but its first counts.
 */
export function exceedsAliasCount(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  type Frame = { node: object; items: unknown[]; next: number; total: number };
  const frame = (node: object): Frame => ({ node, items: Array.isArray(node) ? node : Object.values(node), next: 0, total: 0 });
  const inside = new Map<object, number>(); // aliases in the expansion of each object walked
  const stack = [frame(value)];
  for (;;) {
    const top = stack[stack.length - 1]!;
    if (top.next < top.items.length && top.total <= limit) {
      const item = top.items[top.next++];
      if (item === null || typeof item !== "object") continue;
      const known = inside.get(item); // an object still on the stack would be a cycle, which YAML cannot write
      if (known === undefined) stack.push(frame(item));
      else top.total += 1 + known;
      continue;
    }
    stack.pop();
    inside.set(top.node, top.total);
    const parent = stack[stack.length - 1];
    if (parent === undefined) return top.total > limit;
    parent.total += top.total;
  }
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
