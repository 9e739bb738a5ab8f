/**
 * What a model name resolves to: the one place a surface learns where its request goes.
 * A pool is picked from (replicas, shared state, policies); a provider set is decided by
 * RouteWise (cost and latency over providers); a graph runs steps that are model calls.
 */
import type { CompiledGraph } from "../graph/compile";
import type { RouteWiseSpec } from "../routewise/spec";
import type { ModelRoute } from "./route-table";
import type { ConfigSnapshot } from "./snapshot";

export type ModelTarget =
  | { kind: "pool"; model: string; route: ModelRoute }
  | { kind: "provider_set"; model: string; spec: RouteWiseSpec }
  | { kind: "graph"; model: string; graph: CompiledGraph };

/** The target of a model, or null when the serving config has no such model. */
export function modelTarget(snapshot: ConfigSnapshot, model: string): ModelTarget | null {
  const graphName = snapshot.graphModels.get(model);
  if (graphName !== undefined) {
    const graph = snapshot.graphs.get(graphName);
    return graph ? { kind: "graph", model, graph } : null;
  }
  const spec = snapshot.routewise.get(model);
  if (spec) return { kind: "provider_set", model, spec };
  const route = snapshot.routes.get(model);
  return route ? { kind: "pool", model, route } : null;
}

/** A graph addressed by name (`/graphs/<name>`), as a target. */
export function graphTarget(snapshot: ConfigSnapshot, name: string): ModelTarget | null {
  const graph = snapshot.graphs.get(name);
  return graph ? { kind: "graph", model: name, graph } : null;
}
