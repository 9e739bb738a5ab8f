/**
 * A graph request's spans: one INTERNAL span for the graph, one per node that ran (named
 * by the node, under the graph span), one per step call under its node (a step on a pool
 * holds the pool's routing span and its attempts; a step on a URL, its attempts), and one
 * per router node's decision. Nodes reached through other nodes are all children of the
 * graph span: the step's `switchyard.graph.path` attribute says how it was reached.
 */
import type { GraphRun, NodeResult, RouteChoice, ServiceCall } from "../../core/graph/executor";
import type { Span } from "./trace";

export class GraphSpans {
  readonly #graph: Span;
  readonly #nodes = new Map<string, Span>();

  constructor(parent: Span, graph: string) {
    this.#graph = parent.child(`graph ${graph}`, "internal", { "switchyard.graph": graph });
  }

  /** A step's call, run under its own span (`run` gets it, for the call's routing and attempts). */
  async step(call: ServiceCall, run: (span: Span) => Promise<NodeResult>): Promise<NodeResult> {
    const node = call.label.slice(0, call.label.indexOf("/"));
    const span = this.#node(node).child(`step ${call.label}`, "internal", {
      "switchyard.graph.node": node,
      "switchyard.graph.step": call.label,
      "switchyard.graph.step.target": call.target.kind,
      "switchyard.graph.step.retries": call.retries,
      "switchyard.graph.step.tail": call.tail,
    });
    try {
      const result = await run(span);
      span.set({ "http.response.status_code": result.status });
      if (!result.ok) span.fail(String(result.status));
      return result;
    } catch (error) {
      span.fail("router_error");
      throw error;
    } finally {
      span.end();
    }
  }

  /** A router node's choice of child. */
  async route(node: string, kind: string, run: () => Promise<RouteChoice>): Promise<RouteChoice> {
    const span = this.#node(node).child(`router ${node}`, "internal", { "switchyard.graph.node": node, "switchyard.graph.router": kind });
    try {
      const choice = await run();
      if (choice.ok) span.set({ "switchyard.graph.route": choice.route });
      else span.fail(String(choice.status));
      return choice;
    } finally {
      span.end();
    }
  }

  /** The graph ran: its route and status on the graph span, and every span of its nodes ended. */
  finish(run: GraphRun): void {
    for (const node of this.#nodes.values()) node.end();
    this.#graph.set({ "switchyard.graph.path": run.trace, "http.response.status_code": run.result.status });
    if (!run.result.ok) this.#graph.fail(String(run.result.status));
    this.#graph.end();
  }

  #node(name: string): Span {
    let span = this.#nodes.get(name);
    if (!span) {
      span = this.#graph.child(`node ${name}`, "internal", { "switchyard.graph.node": name });
      this.#nodes.set(name, span);
    }
    return span;
  }
}

/** The graph's spans under `parent`; undefined when the request does not propagate. */
export function graphSpans(parent: Span | undefined, graph: string): GraphSpans | undefined {
  return parent?.trace.propagating ? new GraphSpans(parent, graph) : undefined;
}
