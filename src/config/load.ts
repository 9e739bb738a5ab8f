import { parseAllDocuments } from "yaml";
import type { UnresolvedVars } from "./env-subst";
import { substituteVars } from "./env-subst";
import type { ConfigIssue } from "./issues";
import { formatPath, fromZod, PARSE_PARAMS, sortIssues } from "./issues";
import type { Config } from "./schema";
import { ConfigSchema } from "./schema";
import { InferenceGraphDocumentSchema } from "../graph/schema";
import { graphIssues, kserveGraphNameError } from "../graph/validate";
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
  const parsed = parseDocuments(text);
  if (!parsed.ok) return parsed;
  const multi = parsed.documents.length > 1;
  const prefixed = (i: number, issues: ConfigIssue[]) =>
    multi ? issues.map((e) => ({ ...e, path: e.path === "(document)" ? `documents[${i}]` : `documents[${i}].${e.path}` })) : issues;

  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const secretPaths = new Set<string>();
  const graphs: Record<string, unknown> = {};
  let native: unknown = undefined;
  let nativeIndex = -1;

  parsed.documents.forEach((document, i) => {
    const substituted = substituteVars(document, vars, opts.unresolvedVars ?? "error");
    errors.push(...prefixed(i, substituted.errors));
    warnings.push(...prefixed(i, substituted.warnings));
    for (const path of substituted.secretPaths) secretPaths.add(path);
    const value = substituted.value;

    if (isInferenceGraphDocument(value)) {
      const graph = InferenceGraphDocumentSchema.safeParse(value, PARSE_PARAMS);
      if (!graph.success) {
        errors.push(...prefixed(i, fromZod(graph.error)));
        return;
      }
      const graphName = graph.data.metadata.name;
      const nameError = kserveGraphNameError(graphName);
      if (nameError) errors.push(...prefixed(i, [{ path: "metadata.name", message: nameError }]));
      else if (graphName in graphs) errors.push(...prefixed(i, [{ path: "metadata.name", message: `duplicate InferenceGraph "${graphName}"` }]));
      else graphs[graphName] = graph.data.spec;
      return;
    }
    if (native !== undefined) {
      errors.push({ path: `documents[${i}]`, message: `a second Switchyard config document (the first is documents[${nativeIndex}]); only InferenceGraph documents may repeat` });
      return;
    }
    native = value;
    nativeIndex = i;
  });
  if (errors.length > 0) return { ok: false, errors: sortIssues(errors) };

  if (native !== undefined && isSeed004Document(native)) {
    const seed = Seed004Schema.safeParse(native, PARSE_PARAMS);
    if (!seed.success) return { ok: false, errors: sortIssues(prefixed(nativeIndex, fromZod(seed.error))) };
    native = seed004ToNative(seed.data);
  }
  const merged = mergeGraphs(native ?? {}, graphs);
  if (!merged.ok) return { ok: false, errors: merged.errors };

  const result = ConfigSchema.safeParse(merged.document, PARSE_PARAMS);
  if (!result.success) return { ok: false, errors: sortIssues(prefixed(Math.max(nativeIndex, 0), fromZod(result.error))) };

  const keyErrors = result.data.auth.client_keys.flatMap((key, i): ConfigIssue[] => {
    const path = formatPath(["auth", "client_keys", i]);
    if (CLIENT_KEY_HASH.test(key) || secretPaths.has(path)) return [];
    return [{ path, message: 'must be "sha256:<64 lowercase hex>" or a ${VAR} secret reference; raw keys do not belong in config' }];
  });
  const graphErrors = graphIssues(result.data);
  if (keyErrors.length + graphErrors.length > 0) return { ok: false, errors: sortIssues([...keyErrors, ...graphErrors]) };

  return { ok: true, config: result.data, warnings, secretPaths };
}

function isInferenceGraphDocument(value: unknown): boolean {
  return value !== null && typeof value === "object" && (value as { kind?: unknown }).kind === "InferenceGraph";
}

/** KServe graphs join the native document's own `graphs`; a name may be defined once. */
function mergeGraphs(native: unknown, graphs: Record<string, unknown>): { ok: true; document: unknown } | { ok: false; errors: ConfigIssue[] } {
  if (Object.keys(graphs).length === 0) return { ok: true, document: native };
  if (native === null || typeof native !== "object" || Array.isArray(native)) return { ok: true, document: native };
  const own = (native as { graphs?: unknown }).graphs;
  const ownGraphs = own !== null && typeof own === "object" && !Array.isArray(own) ? (own as Record<string, unknown>) : {};
  const clashes = Object.keys(graphs).filter((name) => name in ownGraphs);
  if (clashes.length > 0) {
    return { ok: false, errors: clashes.map((name) => ({ path: formatPath(["graphs", name]), message: "defined both in graphs and as an InferenceGraph document" })) };
  }
  return { ok: true, document: { ...native, graphs: { ...ownGraphs, ...graphs } } };
}

type Parsed = { ok: true; documents: unknown[] } | { ok: false; errors: ConfigIssue[] };

/** Every non-empty document of a YAML stream (JSON is one YAML document). */
function parseDocuments(text: string): Parsed {
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
    const value = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return;
    if (typeof value !== "object" || Array.isArray(value)) errors.push({ path: where, message: "must be a mapping at the top level" });
    else values.push(value);
  });
  if (errors.length > 0) return { ok: false, errors };
  if (values.length === 0) return { ok: false, errors: [{ path: "(document)", message: "is empty" }] };
  return { ok: true, documents: values };
}

/** Human summary for `switchyard validate`: every model, its pool and each replica's share. */
export function describeConfig(config: Config): string {
  const lines: string[] = [];
  const table = buildRouteTable(config);
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  lines.push(`${count(Object.keys(config.models).length, "model")}, ${count(Object.keys(config.pools).length, "pool")}, ${count(Object.keys(config.graphs).length, "graph")}`);
  for (const route of table.values()) {
    lines.push(`  ${route.model} -> pool ${route.pool}${route.upstreamModel ? ` (as ${route.upstreamModel})` : ""}`);
    for (const r of route.replicas) {
      const labels = r.labels.length > 0 ? ` [${r.labels.join(", ")}]` : "";
      lines.push(`    ${r.id}${labels} ${(r.share * 100).toFixed(1)}%${r.weight === 0 ? " (excluded: weight 0)" : ""}`);
    }
  }
  const t = config.routing;
  lines.push(`  routing: try ${t.try_timeout_ms} ms, deadline ${t.deadline_ms} ms, retry on ${t.retry_on.join("/")}, body <= ${t.max_body_bytes} bytes`);
  for (const [name, graph] of Object.entries(config.graphs)) {
    const models = Object.entries(config.models).filter(([, t]) => t.graph === name).map(([m]) => m);
    lines.push(`  graph ${name} at /graphs/${name}${models.length > 0 ? ` (models: ${models.join(", ")})` : ""}`);
    for (const [nodeName, node] of Object.entries(graph.nodes)) {
      lines.push(`    ${nodeName}: ${node.routerType}${node.router ? ` (${node.router.type})` : ""}, ${node.steps.length} step${node.steps.length === 1 ? "" : "s"}`);
    }
  }
  lines.push(`  client keys: ${config.auth.client_keys.length === 0 ? "none (open)" : config.auth.client_keys.length}`);
  return lines.join("\n");
}
