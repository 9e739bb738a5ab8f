import type { SubstitutionResult, UnresolvedVars } from "./env-subst";
import { DEFERRED_PLACEHOLDER, substituteVars } from "./env-subst";
import type { ConfigIssue } from "./issues";
import { formatPath, fromZod, PARSE_PARAMS, sortIssues } from "./issues";
import type { Redactions } from "./redact";
import { redactionsFor } from "./redact";
import type { Config } from "./schema";
import { ConfigSchema } from "./schema";
import type { GraphSpec } from "./graph-schema";
import { InferenceGraphDocumentSchema } from "./graph-schema";
import { graphIssues, kserveGraphNameError } from "./graph-validate";
import { isSeed004Document, Seed004Schema, seed004ToNative } from "./legacy-routing-yaml";
import { routeWiseWarnings } from "./routewise-warnings";

export type LoadResult =
  | { ok: true; config: Config; warnings: ConfigIssue[]; secretPaths: Map<string, string>; redactions: Redactions }
  | { ok: false; errors: ConfigIssue[] };

const CLIENT_KEY_HASH = /^sha256:[0-9a-f]{64}$/;

export interface LoadOptions {
  unresolvedVars?: UnresolvedVars;
}

/**
 * The documents of a config (as ./yaml.ts or ./blob.ts read them) -> validated Config.
 * Every problem is reported, each named by its path; nothing is partially accepted.
 * No message shows a secret: see ./redact.ts for the rule.
 * No YAML here, so loading a stored blob (./blob.ts) never runs the YAML parser.
 */
export function loadDocuments(documents: readonly unknown[], vars: Record<string, unknown>, opts: LoadOptions = {}): LoadResult {
  const envValues = new Map<string, string>();
  const written = new Map<string, string>();
  const substitutedDocuments: unknown[] = [];
  const result = validateDocuments(documents, vars, opts, (substituted) => {
    for (const [value, name] of substituted.envValues) envValues.set(value, name);
    for (const [value, shown] of substituted.written) written.set(value, shown);
    substitutedDocuments.push(substituted.value);
  });
  const redactions = redactionsFor(substitutedDocuments, envValues, written, vars);
  return result.ok
    ? { ...result, warnings: redactions.issues(result.warnings), redactions }
    : { ok: false, errors: redactions.issues(result.errors) };
}

function validateDocuments(
  documents: readonly unknown[],
  vars: Record<string, unknown>,
  opts: LoadOptions,
  onSubstituted: (substituted: SubstitutionResult) => void,
): { ok: true; config: Config; warnings: ConfigIssue[]; secretPaths: Map<string, string> } | { ok: false; errors: ConfigIssue[] } {
  const multi = documents.length > 1;
  const prefixed = (i: number, issues: ConfigIssue[]) =>
    multi ? issues.map((e) => ({ ...e, path: e.path === "(document)" ? `documents[${i}]` : `documents[${i}].${e.path}` })) : issues;

  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const secretPaths = new Map<string, string>();
  const defaults = new Map<string, string>();
  const graphs: Record<string, unknown> = {};
  let native: unknown = undefined;
  let nativeIndex = -1;
  let nativeReferences = new Map<string, string>();

  documents.forEach((document, i) => {
    const substituted = substituteVars(document, vars, opts.unresolvedVars ?? "error");
    onSubstituted(substituted);
    errors.push(...prefixed(i, substituted.errors));
    warnings.push(...prefixed(i, substituted.warnings));
    for (const [path, name] of substituted.secretPaths) secretPaths.set(path, name);
    for (const [path, fallback] of substituted.defaults) defaults.set(path, fallback);
    const value = substituted.value;

    if (isInferenceGraphDocument(value)) {
      const graph = InferenceGraphDocumentSchema.safeParse(value, PARSE_PARAMS);
      if (!graph.success) {
        errors.push(...prefixed(i, fromZod(graph.error)));
        return;
      }
      const referenced = graphReferenceIssues(graph.data.spec, ["spec"], substituted.references);
      if (substituted.references.has("metadata.name")) referenced.push(referenceIssue("metadata.name", substituted.references.get("metadata.name")!, "a graph's name shows in its path, metric labels and object names"));
      if (referenced.length > 0) {
        errors.push(...prefixed(i, referenced));
        return;
      }
      const graphName = graph.data.metadata.name;
      const nameError = kserveGraphNameError(graphName);
      if (nameError) errors.push(...prefixed(i, [{ path: "metadata.name", message: nameError }]));
      else if (Object.hasOwn(graphs, graphName)) errors.push(...prefixed(i, [{ path: "metadata.name", message: `duplicate InferenceGraph "${graphName}"` }]));
      else graphs[graphName] = graph.data.spec;
      return;
    }
    if (native !== undefined) {
      errors.push({ path: `documents[${i}]`, message: `a second Switchyard config document (the first is documents[${nativeIndex}]); only InferenceGraph documents may repeat` });
      return;
    }
    native = value;
    nativeIndex = i;
    nativeReferences = substituted.references;
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

  const keyErrors = [
    ...result.data.auth.client_keys.flatMap((key, i): ConfigIssue[] => clientKeyIssues(key, formatPath(["auth", "client_keys", i]), secretPaths, defaults)),
    ...result.data.auth.keys.flatMap((entry, i): ConfigIssue[] => clientKeyIssues(entry.key, formatPath(["auth", "keys", i, "key"]), secretPaths, defaults)),
    ...duplicateKeyIssues(result.data, secretPaths),
  ];
  const graphErrors = graphIssues(result.data);
  const idErrors = prefixed(Math.max(nativeIndex, 0), idReferenceIssues(result.data, nativeReferences));
  if (keyErrors.length + graphErrors.length + idErrors.length > 0) return { ok: false, errors: sortIssues([...keyErrors, ...graphErrors, ...idErrors]) };

  // Models live in the native document, so their warnings are named as its schema errors are.
  warnings.push(...prefixed(Math.max(nativeIndex, 0), routeWiseWarnings(result.data)));
  return { ok: true, config: result.data, warnings, secretPaths };
}

/**
 * A client key entry is a digest, `sha256:` and 64 lowercase hex digits, or a `${VAR}`
 * secret. A secret whose value starts with `sha256:` (any case) is read as a digest, so it
 * must be a valid one too: anything else would fail every keyed request later. Messages
 * name the variable, never the value.
 */
function clientKeyIssues(key: string, path: string, secretPaths: ReadonlyMap<string, string>, defaults: ReadonlyMap<string, string>): ConfigIssue[] {
  const variable = secretPaths.get(path);
  const fallback = defaults.get(path);
  // `${KEY:-sk-…}` writes a raw key into the config as surely as `sk-…` does; a digest default is fine.
  if (variable !== undefined && fallback !== undefined && !CLIENT_KEY_HASH.test(fallback)) {
    return [{ path, message: `the default of \${${variable}} must be a "sha256:<64 lowercase hex>" digest, or be left out (\${${variable}} alone): a raw key written as a default is still a raw key in the config` }];
  }
  if (CLIENT_KEY_HASH.test(key)) return [];
  if (/^sha256:/i.test(key)) {
    const digest = 'a valid digest, "sha256:<64 lowercase hex>"';
    const message = variable !== undefined ? `the value of \${${variable}} starts with "sha256:" but is not ${digest}` : `is not ${digest}`;
    return [{ path, message }];
  }
  if (variable !== undefined) return [];
  return [{ path, message: 'must be "sha256:<64 lowercase hex>" or a ${VAR} secret reference; raw keys do not belong in config' }];
}

/**
 * A key listed twice: the first entry would win every request, so the second's name, team
 * and limits would silently never apply. Compared as the config gives them (the same
 * secret, the same value, the same digest); messages name paths, never values. A secret
 * whose value is another entry's `sha256:` digest is not caught here: that takes hashing.
 */
function duplicateKeyIssues(config: Config, secretPaths: ReadonlyMap<string, string>): ConfigIssue[] {
  const first = new Map<string, string>();
  const issues: ConfigIssue[] = [];
  const entries: [string, string][] = [
    ...config.auth.client_keys.map((key, i): [string, string] => [key, formatPath(["auth", "client_keys", i])]),
    ...config.auth.keys.map((entry, i): [string, string] => [entry.key, formatPath(["auth", "keys", i, "key"])]),
  ];
  for (const [key, path] of entries) {
    // Unset secrets (the CLI cannot see them) all read as one placeholder: told apart by name.
    const identity = key === DEFERRED_PLACEHOLDER ? `\${${secretPaths.get(path)}}` : key;
    const earlier = first.get(identity);
    if (earlier === undefined) first.set(identity, path);
    else issues.push({ path, message: `the same key as ${earlier}: a key is listed once (one in both lists belongs in auth.keys, where it has a name), or the first entry would take all its requests and this one's limits would never apply` });
  }
  return issues;
}

/**
 * Ids are shown: a replica's in `x-switchyard-replica` and metric labels, a route's in
 * `/routing` and metrics, quota and concurrency pool ids in object names and metrics, and
 * the pool object stores replica ids and labels. One made from a `${VAR}` could carry a secret to all
 * of those, so ids must be written as text. Refused whether the variable is set or not,
 * so `switchyard validate` (which cannot see secrets) refuses it too.
 */
function idReferenceIssues(config: Config, references: ReadonlyMap<string, string>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const check = (path: PropertyKey[], why = "ids show in response headers, metric labels and object names") => {
    const at = formatPath(path);
    const variable = references.get(at);
    if (variable !== undefined) issues.push(referenceIssue(at, variable, why));
  };
  for (const [pool, settings] of Object.entries(config.pools)) {
    settings.replicas.forEach((replica, i) => {
      check(["pools", pool, "replicas", i, "id"]);
      // The pool's object stores its spec, labels included, and /routing shows them.
      replica.labels.forEach((_, j) => check(["pools", pool, "replicas", i, "labels", j], "labels show in /routing and are stored by the pool's object"));
    });
  }
  // Key and team names show in rate-limit headers, logs and object names; a limit names them.
  config.auth.keys.forEach((_, i) => {
    for (const key of ["name", "team"]) check(["auth", "keys", i, key]);
  });
  config.limits.forEach((_, i) => {
    for (const key of ["key", "team", "model"]) check(["limits", i, key]);
  });
  for (const [model, target] of Object.entries(config.models)) {
    target.routes?.forEach((_, i) => {
      for (const key of ["id", "quota_pool", "concurrency_pool"]) check(["models", model, "routes", i, key]);
    });
  }
  for (const [name, graph] of Object.entries(config.graphs)) issues.push(...graphReferenceIssues(graph, ["graphs", name], references));
  return issues;
}

function referenceIssue(path: string, variable: string, why: string): ConfigIssue {
  return { path, message: `must not hold a \${VAR} reference (\${${variable}}): ${why}` };
}

/**
 * A graph's step names show in `x-switchyard-route`, spans and metric labels, and a
 * bandit's branch names are stored by its object and shown in /routing: written as text,
 * as ids are. `at` is where the graph's spec sits in its document.
 */
function graphReferenceIssues(graph: GraphSpec, at: PropertyKey[], references: ReadonlyMap<string, string>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const check = (path: PropertyKey[], why: string) => {
    const variable = references.get(formatPath(path));
    if (variable !== undefined) issues.push(referenceIssue(formatPath(path), variable, why));
  };
  for (const [name, node] of Object.entries(graph.nodes)) {
    node.steps.forEach((_, i) => check([...at, "nodes", name, "steps", i, "name"], "step names show in x-switchyard-route, spans and metric labels"));
    const router = node.router;
    if (router && "branch_names" in router) router.branch_names?.forEach((_, j) => check([...at, "nodes", name, "router", "branch_names", j], "branch names are stored by the router's object and shown in /routing"));
  }
  return issues;
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
  const clashes = Object.keys(graphs).filter((name) => Object.hasOwn(ownGraphs, name));
  if (clashes.length > 0) {
    return { ok: false, errors: clashes.map((name) => ({ path: formatPath(["graphs", name]), message: "defined both in graphs and as an InferenceGraph document" })) };
  }
  return { ok: true, document: { ...native, graphs: { ...ownGraphs, ...graphs } } };
}
