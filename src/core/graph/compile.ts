import type { Config } from "../config/schema";
import type { CompiledPath } from "../../lib/gjson";
import { compilePath } from "../../lib/gjson";
import type { GraphNode, GraphSpec, RouterSpec, Service, Step } from "../config/graph-schema";
import { GRAPH_ROOT, MAX_GRAPH_DEPTH } from "../config/graph-schema";
import { upstreamUrl } from "../upstream/url";

/** Where a step's request goes: another node, a URL, or a pool (replica picking, circuits and load, as for models). */
export type ServiceTarget = { kind: "url"; url: string } | { kind: "pool"; pool: string; path: string };
export type StepTarget = { kind: "node"; node: string } | { kind: "service"; service: ServiceTarget };

export interface CompiledStep {
  /** Trace label: the step's name, or its index in the node. */
  label: string;
  /** Ensemble result key: the name, or the index as a string (KServe). */
  key: string;
  target: StepTarget;
  condition: CompiledPath | null;
  chainResponse: boolean;
  mapPredictionsToInstances: boolean;
  hard: boolean;
  weight: number;
  timeoutMs: number;
  retries: number;
}

export interface CompiledNode {
  name: string;
  routerType: GraphNode["routerType"];
  /** Steps that route, in order; mirror steps are kept apart. */
  steps: CompiledStep[];
  mirrors: { step: CompiledStep; percent: number }[];
  router: (RouterSpec & { target?: ServiceTarget }) | null;
}

export interface CompiledGraph {
  name: string;
  root: CompiledNode;
  nodes: Map<string, CompiledNode>;
  maxDepth: number;
}

/**
 * A graph turned into what the executor walks: service names resolved to URLs the way
 * KServe's controller does, conditions compiled, timeouts settled. Built once per config
 * version (the config has been validated, so every reference resolves).
 */
export function compileGraphs(config: Config): Map<string, CompiledGraph> {
  const graphs = new Map<string, CompiledGraph>();
  for (const [name, spec] of Object.entries(config.graphs)) {
    const defaultTimeoutMs = spec.routerTimeouts?.serviceClient !== undefined ? spec.routerTimeouts.serviceClient * 1000 : config.graph_settings.step_timeout_ms;
    const nodes = new Map<string, CompiledNode>();
    for (const [nodeName, node] of Object.entries(spec.nodes)) nodes.set(nodeName, compileNode(nodeName, node, config.services, defaultTimeoutMs));
    const root = nodes.get(GRAPH_ROOT);
    if (root) graphs.set(name, { name, root, nodes, maxDepth: MAX_GRAPH_DEPTH });
  }
  return graphs;
}

function compileNode(name: string, node: GraphNode, services: Record<string, Service>, defaultTimeoutMs: number): CompiledNode {
  const steps: CompiledStep[] = [];
  const mirrors: CompiledNode["mirrors"] = [];
  node.steps.forEach((step, index) => {
    const compiled = compileStep(step, index, services, defaultTimeoutMs);
    if (step.mirror !== undefined) mirrors.push({ step: compiled, percent: step.mirror });
    else steps.push(compiled);
  });
  const router = node.router ?? null;
  const routerTarget: ServiceTarget | undefined =
    router?.type === "external" ? (router.serviceUrl !== undefined ? { kind: "url", url: router.serviceUrl } : serviceTarget(services, router.serviceName!)) : undefined;
  return { name, routerType: node.routerType, steps, mirrors, router: router && routerTarget !== undefined ? { ...router, target: routerTarget } : router };
}

function compileStep(step: Step, index: number, services: Record<string, Service>, defaultTimeoutMs: number): CompiledStep {
  const target: StepTarget =
    step.nodeName !== undefined
      ? { kind: "node", node: step.nodeName }
      : {
          kind: "service",
          service:
            step.pool !== undefined
              ? { kind: "pool", pool: step.pool, path: step.path! }
              : step.serviceUrl !== undefined
                ? { kind: "url", url: step.serviceUrl }
                : serviceTarget(services, step.serviceName!),
        };
  return {
    label: step.name ?? String(index),
    key: step.name ?? String(index),
    target,
    condition: step.condition !== undefined ? compilePath(step.condition) : null,
    chainResponse: step.data === "$response",
    mapPredictionsToInstances: step.mapPredictionsToInstances ?? false,
    hard: step.dependency === "Hard",
    weight: step.weight ?? 0,
    timeoutMs: step.timeoutMs ?? defaultTimeoutMs,
    retries: step.retries ?? 0,
  };
}

/**
 * KServe's GetPredictorEndpoint: v1 `/v1/models/<m>:predict`, v2 `/v2/models/<m>/infer`,
 * on the service's URL, or (Switchyard) on whichever replica its pool picks.
 */
function serviceTarget(services: Record<string, Service>, name: string): ServiceTarget {
  const service = services[name]!;
  const path = predictPath(service.protocol, service.model ?? name);
  if (service.pool !== undefined) return { kind: "pool", pool: service.pool, path };
  return { kind: "url", url: upstreamUrl(service.url!, path) }; // the router's one join rule (../upstream/url.ts)
}

/** The KServe protocol path of a model's inference endpoint. */
/** `version`: a v2 model version the client named (`/v2/models/<m>/versions/<v>/infer`), passed on as named. */
export function predictPath(protocol: "v1" | "v2", model: string, version?: string): string {
  const m = encodeURIComponent(model);
  if (protocol === "v1") return `/v1/models/${m}:predict`;
  return version === undefined ? `/v2/models/${m}/infer` : `/v2/models/${m}/versions/${encodeURIComponent(version)}/infer`;
}

export type { GraphSpec };
