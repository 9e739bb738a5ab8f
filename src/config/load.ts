import { parseAllDocuments } from "yaml";
import type { UnresolvedVars } from "./env-subst";
import { substituteVars } from "./env-subst";
import type { ConfigIssue } from "./issues";
import { formatPath, fromZod, sortIssues } from "./issues";
import type { Config } from "./schema";
import { ConfigSchema } from "./schema";
import { isSeed004Document, Seed004Schema, seed004ToNative } from "./seed004";
import { buildRouteTable } from "../routing/route-table";

export type { ConfigIssue } from "./issues";

export type LoadResult =
  | { ok: true; config: Config; warnings: ConfigIssue[]; secretPaths: Set<string> }
  | { ok: false; errors: ConfigIssue[] };

const CLIENT_KEY_HASH = /^sha256:[0-9a-f]{64}$/;

/**
 * Text (YAML or JSON) -> validated Config. Every problem is reported, each named by
 * its path; nothing is partially accepted.
 */
export function loadConfig(text: string, vars: Record<string, unknown>, opts: { unresolvedVars?: UnresolvedVars } = {}): LoadResult {
  const parsed = parseDocument(text);
  if (!parsed.ok) return parsed;

  const substituted = substituteVars(parsed.document, vars, opts.unresolvedVars ?? "error");
  if (substituted.errors.length > 0) return { ok: false, errors: sortIssues(substituted.errors) };

  let native: unknown = substituted.value;
  if (isSeed004Document(native)) {
    const seed = Seed004Schema.safeParse(native, { reportInput: true });
    if (!seed.success) return { ok: false, errors: sortIssues(fromZod(seed.error)) };
    native = seed004ToNative(seed.data);
  }

  const result = ConfigSchema.safeParse(native, { reportInput: true });
  if (!result.success) return { ok: false, errors: sortIssues(fromZod(result.error)) };

  const keyErrors = result.data.auth.client_keys.flatMap((key, i): ConfigIssue[] => {
    const path = formatPath(["auth", "client_keys", i]);
    if (CLIENT_KEY_HASH.test(key) || substituted.secretPaths.has(path)) return [];
    return [{ path, message: 'must be "sha256:<64 lowercase hex>" or a ${VAR} secret reference; raw keys do not belong in config' }];
  });
  if (keyErrors.length > 0) return { ok: false, errors: keyErrors };

  return { ok: true, config: result.data, warnings: substituted.warnings, secretPaths: substituted.secretPaths };
}

type Parsed = { ok: true; document: unknown } | { ok: false; errors: ConfigIssue[] };

function parseDocument(text: string): Parsed {
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
    if (doc.errors.length === 0) {
      const value = doc.toJS({ maxAliasCount: 100 });
      if (value !== null && value !== undefined) values.push(value);
    }
  });
  if (errors.length > 0) return { ok: false, errors };
  if (values.length === 0) return { ok: false, errors: [{ path: "(document)", message: "is empty" }] };
  if (values.length > 1) {
    return { ok: false, errors: [{ path: "documents[1]", message: "only one Switchyard config document per file is supported" }] };
  }
  const document = values[0];
  if (document === null || typeof document !== "object" || Array.isArray(document)) {
    return { ok: false, errors: [{ path: "(document)", message: "must be a mapping at the top level" }] };
  }
  return { ok: true, document };
}

/** Human summary for `switchyard validate`: every model, its pool and each replica's share. */
export function describeConfig(config: Config): string {
  const lines: string[] = [];
  const table = buildRouteTable(config);
  lines.push(`${table.size} model${table.size === 1 ? "" : "s"}, ${Object.keys(config.pools).length} pool${Object.keys(config.pools).length === 1 ? "" : "s"}`);
  for (const route of table.values()) {
    lines.push(`  ${route.model} -> pool ${route.pool}${route.upstreamModel ? ` (as ${route.upstreamModel})` : ""}`);
    for (const r of route.replicas) {
      const labels = r.labels.length > 0 ? ` [${r.labels.join(", ")}]` : "";
      lines.push(`    ${r.id}${labels} ${(r.share * 100).toFixed(1)}%${r.weight === 0 ? " (excluded: weight 0)" : ""}`);
    }
  }
  const t = config.routing;
  lines.push(`  routing: try ${t.try_timeout_ms} ms, deadline ${t.deadline_ms} ms, retry on ${t.retry_on.join("/")}, body <= ${t.max_body_bytes} bytes`);
  lines.push(`  client keys: ${config.auth.client_keys.length === 0 ? "none (open)" : config.auth.client_keys.length}`);
  return lines.join("\n");
}
