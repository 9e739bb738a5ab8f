import type { Config } from "./schema";
import type { ConfigIssue } from "./issues";
import { formatPath } from "./issues";
import { compilePath, GjsonSyntaxError } from "../../lib/gjson";
import { compileHeaderPatterns } from "../upstream/propagate";
import { isHttpUrl } from "./url";
import type { GraphSpec, Step } from "./graph-schema";
import { GRAPH_ROOT, MAX_GRAPH_DEPTH } from "./graph-schema";

const KSERVE_NAME = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** KServe's webhook rule for InferenceGraph names, with its own message. */
export function kserveGraphNameError(name: string): string | null {
  if (KSERVE_NAME.test(name)) return null;
  return `The InferenceGraph "${name}" is invalid: a InferenceGraph name must consist of lower case alphanumeric characters or '-', and must start with alphabetical character. (e.g. "my-name" or "abc-123", regex used for validation is '${KSERVE_NAME.source}')`;
}

/**
 * Everything KServe's webhook checks (same messages), plus what it leaves to runtime
 * failures: node references, cycles, depth, condition syntax, a condition on a
 * Sequence's first step (always a 500 in KServe), router settings, service names.
 */
export function graphIssues(config: Config): ConfigIssue[] {
  const issues: ConfigIssue[] = serviceIssues(config);
  const patterns = compileHeaderPatterns(config.graph_settings.propagate_headers);
  if (!patterns.ok) issues.push({ path: formatPath(["graph_settings", "propagate_headers", patterns.index]), message: `invalid regular expression: ${patterns.message}` });
  for (const [graphName, graph] of Object.entries(config.graphs)) {
    const at = (...path: PropertyKey[]) => formatPath(["graphs", graphName, ...path]);
    if (!Object.hasOwn(graph.nodes, GRAPH_ROOT)) {
      issues.push({ path: at("nodes"), message: "root node not found, InferenceGraph needs a node with name 'root' as the root node of the graph" });
    }
    for (const [nodeName, node] of Object.entries(graph.nodes)) {
      const seen = new Set<string>();
      node.steps.forEach((step, i) => {
        const stepAt = (...path: PropertyKey[]) => at("nodes", nodeName, "steps", i, ...path);
        if (step.name !== undefined) {
          if (seen.has(step.name)) issues.push({ path: stepAt("name"), message: `Node "${nodeName}" of InferenceGraph "${graphName}" contains more than one step with name "${step.name}"` });
          seen.add(step.name);
        }
        issues.push(...stepTargetIssues(step, i, nodeName, graphName, graph, config, stepAt));
        if (step.mirror !== undefined && step.nodeName !== undefined) issues.push({ path: stepAt("mirror"), message: "a mirror step must call a service (serviceName or serviceUrl), not a node" });
        if (step.condition !== undefined) {
          try {
            compilePath(step.condition);
          } catch (error) {
            if (!(error instanceof GjsonSyntaxError)) throw error;
            issues.push({ path: stepAt("condition"), message: `invalid GJSON condition: ${error.message}` });
          }
          if (node.routerType === "Sequence" && i === 0) {
            issues.push({ path: stepAt("condition"), message: "a condition on a Sequence's first step is tested on a response that does not exist yet (KServe answers 500 'invalid response')" });
          }
        }
      });
      if (node.steps.filter((s) => s.mirror === undefined).length === 0) {
        issues.push({ path: at("nodes", nodeName, "steps"), message: "must have at least one step that is not a mirror" });
      }
      if (node.routerType === "Splitter") {
        const routed = node.steps.filter((s) => s.mirror === undefined);
        routed.forEach((step) => {
          if (step.weight === undefined) {
            issues.push({ path: at("nodes", nodeName, "steps", node.steps.indexOf(step), "weight"), message: `InferenceGraph[${graphName}] Node[${nodeName}] Route[${step.serviceName ?? ""}] missing the 'Weight'` });
          }
        });
        const total = routed.reduce((sum, s) => sum + (s.weight ?? 0), 0);
        if (routed.every((s) => s.weight !== undefined) && total !== 100) {
          issues.push({ path: at("nodes", nodeName), message: `InferenceGraph[${graphName}] Node[${nodeName}] splitter node: the sum of traffic weights for all routing targets should be 100` });
        }
      }
      if (node.routerType === "Router") issues.push(...routerIssues(node, config, (...p) => at("nodes", nodeName, ...p)));
      else if (node.router !== undefined) issues.push({ path: at("nodes", nodeName, "router"), message: "applies to routerType Router only" });
    }
    issues.push(...cycleIssues(graph, at));
  }
  return issues;
}

function stepTargetIssues(
  step: Step,
  index: number,
  nodeName: string,
  graphName: string,
  graph: GraphSpec,
  config: Config,
  at: (...path: PropertyKey[]) => string,
): ConfigIssue[] {
  const targets = [step.nodeName, step.serviceName, step.serviceUrl, step.pool].filter((t) => t !== undefined).length;
  const label = `Step ${index} ("${step.name ?? ""}") in node "${nodeName}" of InferenceGraph "${graphName}"`;
  if (targets === 0) return [{ path: at(), message: `${label} does not specify an inference target` }];
  if (targets > 1) return [{ path: at(), message: `${label} specifies more than one of nodeName, serviceName, serviceUrl, pool` }];
  if (step.path !== undefined && step.pool === undefined) return [{ path: at("path"), message: "applies to a step with pool only" }];
  if (step.nodeName !== undefined && !Object.hasOwn(graph.nodes, step.nodeName)) return [{ path: at("nodeName"), message: `unknown node "${step.nodeName}"` }];
  if (step.serviceName !== undefined && !Object.hasOwn(config.services, step.serviceName)) return [{ path: at("serviceName"), message: `unknown service "${step.serviceName}" (add it under services)` }];
  if (step.serviceUrl !== undefined && !isHttpUrl(step.serviceUrl, { allowQuery: true })) return [{ path: at("serviceUrl"), message: "must be an absolute http(s) URL" }];
  if (step.pool !== undefined) {
    if (!Object.hasOwn(config.pools, step.pool)) return [{ path: at("pool"), message: `unknown pool "${step.pool}"` }];
    if (anthropicOnly(config, step.pool)) return [{ path: at("pool"), message: ANTHROPIC_ONLY(step.pool) }];
    if (step.path === undefined) return [{ path: at("path"), message: "is required with pool: the path each replica is called on, e.g. /v1/models/<model>:predict" }];
    if (!isPlainPath(step.path)) return [{ path: at("path"), message: "must be an absolute path without query or fragment" }];
  }
  const service = step.serviceName !== undefined ? config.services[step.serviceName] : undefined;
  if (step.retries !== undefined && (step.pool !== undefined || service?.pool !== undefined)) {
    return [{ path: at("retries"), message: "a step that targets a pool tries its replicas in the pool's fallback order (routing.max_attempts); remove retries" }];
  }
  return [];
}

/** A request path the router may join to a replica's URL: absolute, no query, fragment or dot segments. */
function isPlainPath(path: string): boolean {
  return path.startsWith("/") && !/[?#\s]/.test(path) && !path.split("/").some((segment) => segment === "." || segment === "..");
}

/** A step sends its body as it is, never translated to Messages, so an Anthropic replica never takes one (dialects.md). */
const anthropicOnly = (config: Config, pool: string): boolean => {
  const replicas = config.pools[pool]!.replicas;
  return replicas.length > 0 && replicas.every((r) => r.dialect === "anthropic");
};
const ANTHROPIC_ONLY = (pool: string) => `pool "${pool}" has only Anthropic-native replicas, which take no graph step (a step's body is sent as it is, not translated to Messages)`;

/** Every service names one target: a URL (KServe) or a pool (Switchyard). */
export function serviceIssues(config: Config): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [name, service] of Object.entries(config.services)) {
    const at = (...path: PropertyKey[]) => formatPath(["services", name, ...path]);
    if ((service.url === undefined) === (service.pool === undefined)) issues.push({ path: at(), message: "needs exactly one of url and pool" });
    else if (service.url !== undefined && !isHttpUrl(service.url)) issues.push({ path: at("url"), message: "must be an absolute http(s) URL without query or fragment" });
    else if (service.pool !== undefined && !Object.hasOwn(config.pools, service.pool)) issues.push({ path: at("pool"), message: `unknown pool "${service.pool}"` });
    else if (service.pool !== undefined && anthropicOnly(config, service.pool)) issues.push({ path: at("pool"), message: ANTHROPIC_ONLY(service.pool) });
  }
  return issues;
}

function routerIssues(node: GraphSpec["nodes"][string], config: Config, at: (...path: PropertyKey[]) => string): ConfigIssue[] {
  const router = node.router;
  if (!router) return [{ path: at("router"), message: "is required for routerType Router" }];
  const children = node.steps.filter((s) => s.mirror === undefined).length;
  switch (router.type) {
    case "external": {
      const targets = [router.serviceUrl, router.serviceName].filter((t) => t !== undefined).length;
      if (targets !== 1) return [{ path: at("router"), message: "an external router needs exactly one of serviceUrl or serviceName" }];
      if (router.serviceName !== undefined && !Object.hasOwn(config.services, router.serviceName)) return [{ path: at("router", "serviceName"), message: `unknown service "${router.serviceName}"` }];
      if (router.serviceUrl !== undefined && !isHttpUrl(router.serviceUrl, { allowQuery: true })) return [{ path: at("router", "serviceUrl"), message: "must be an absolute http(s) URL" }];
      return [];
    }
    case "epsilon_greedy":
    case "thompson_sampling": {
      const issues: ConfigIssue[] = [];
      if (router.n_branches !== children) issues.push({ path: at("router", "n_branches"), message: `must equal the number of steps (${children})` });
      if (router.branch_names && router.branch_names.length !== router.n_branches) issues.push({ path: at("router", "branch_names"), message: "must name every branch" });
      if (router.type === "epsilon_greedy" && router.best_branch != null && router.best_branch >= router.n_branches) {
        issues.push({ path: at("router", "best_branch"), message: `must be < n_branches (${router.n_branches})` });
      }
      return issues;
    }
    case "random_abtest":
      return children === 2 ? [] : [{ path: at("steps"), message: "RANDOM_ABTEST routes between exactly two steps (A and B)" }];
  }
}

/** nodeName links must form a DAG no deeper than MAX_GRAPH_DEPTH. */
function cycleIssues(graph: GraphSpec, at: (...path: PropertyKey[]) => string): ConfigIssue[] {
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const issues: ConfigIssue[] = [];
  const visit = (node: string, trail: string[]): number => {
    const known = depth.get(node);
    if (known !== undefined) return known;
    if (visiting.has(node)) {
      issues.push({ path: at("nodes", node), message: `cycle through nodeName links: ${[...trail, node].join(" -> ")}` });
      return 0;
    }
    visiting.add(node);
    let deepest = 0;
    for (const step of graph.nodes[node]?.steps ?? []) {
      if (step.nodeName !== undefined && Object.hasOwn(graph.nodes, step.nodeName)) deepest = Math.max(deepest, visit(step.nodeName, [...trail, node]));
    }
    visiting.delete(node);
    depth.set(node, deepest + 1);
    return deepest + 1;
  };
  for (const node of Object.keys(graph.nodes)) visit(node, []);
  const rootDepth = depth.get(GRAPH_ROOT) ?? 0;
  if (rootDepth > MAX_GRAPH_DEPTH) issues.push({ path: at("nodes", GRAPH_ROOT), message: `graph is ${rootDepth} nodes deep; at most ${MAX_GRAPH_DEPTH}` });
  return issues;
}

