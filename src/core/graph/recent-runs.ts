/**
 * The last few runs of each graph in one isolate: when, the route taken through its nodes
 * and steps (as `x-switchyard-route` gives it) and the status. What `/routing` and the
 * dashboard show as a graph's last decisions; bounded however many graphs and requests.
 */
export const RUNS_KEPT_PER_GRAPH = 10; // enough to see a Switch or a bandit alternate, small enough to render every refresh
export const GRAPHS_KEPT = 256; // a config's graphs, with room: past it the least recently run graph is forgotten

export interface GraphRunRecord {
  at: number;
  route: readonly string[];
  status: number;
}

export class RecentGraphRuns {
  #runs = new Map<string, GraphRunRecord[]>();

  record(graph: string, run: GraphRunRecord): void {
    const runs = this.#runs.get(graph) ?? [];
    this.#runs.delete(graph); // re-inserted last: the map's order is least recently run first
    runs.push({ at: run.at, route: run.route.slice(0, 64), status: run.status });
    if (runs.length > RUNS_KEPT_PER_GRAPH) runs.shift();
    this.#runs.set(graph, runs);
    if (this.#runs.size > GRAPHS_KEPT) this.#runs.delete(this.#runs.keys().next().value!);
  }

  /** Newest first. */
  recent(graph: string): readonly GraphRunRecord[] {
    return [...(this.#runs.get(graph) ?? [])].reverse();
  }
}
