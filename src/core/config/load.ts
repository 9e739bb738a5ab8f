import type { LoadOptions, LoadResult } from "./documents";
import { loadDocuments } from "./documents";
import { parseYamlDocuments } from "./yaml";

export type { ConfigIssue } from "./issues";
export type { LoadOptions, LoadResult } from "./documents";

/**
 * Text (YAML or JSON) -> validated Config, for the CLI and tests. Worker code imports
 * ./blob.ts instead: this module loads the YAML parser eagerly.
 */
export function loadConfig(text: string, vars: Record<string, unknown>, opts: LoadOptions = {}): LoadResult {
  const parsed = parseYamlDocuments(text);
  return parsed.ok ? loadDocuments(parsed.documents, vars, opts) : parsed;
}
