import type { CounterSample } from "../../core/pool/wire";
import type { GraphCountersSync, GraphCountersView, GraphNews } from "../../core/graph/graph-counters";
import { GRAPH_DURATION_FAMILY, GRAPH_REQUESTS_FAMILY } from "../../core/graph/graph-counters";
import type { Sealed } from "../../core/state/batches";
import { Tally } from "../../lib/counters";
import { StateClient } from "./state-client";

export const GRAPH_COUNTERS_SYNC_MS = 1_000; // a graph's counts reach its object within about a second while traffic flows (a /metrics read flushes first)

/** The graph object's RPC surface (src/platform/objects/graph-counters.ts). */
export interface GraphCountersRpc {
  sync(request: GraphCountersSync): Promise<GraphCountersView>;
  snapshot(): Promise<Record<string, CounterSample[]>>;
}

/**
 * One isolate's reports to one graph's counters object: how each request to the graph's
 * models ended (status, ms from arrival to the graph's answer), in batches on the shared
 * protocol (./state-client.ts). It reads nothing back.
 */
export class GraphCountersAgent extends StateClient<GraphNews, GraphCountersView> {
  protected readonly what = "graph_counters_sync";
  protected override readonly refreshes = false; // nothing to read back: it calls only with news
  readonly #requests = new Tally(["model", "status"]);
  readonly #durationMs = new Tally(["model"]);

  constructor(
    private readonly isolate: () => string,
    graph: string,
    private readonly rpc: () => GraphCountersRpc,
    now?: () => number,
  ) {
    super(`graph:${graph}`, GRAPH_COUNTERS_SYNC_MS, now);
  }

  /** A request to one of the graph's models ended: the status its client got, and ms since it arrived. */
  finished(model: string, status: number, durationMs: number): void {
    this.#requests.add([model, String(status)]);
    if (Number.isFinite(durationMs)) this.#durationMs.add([model], Math.max(0, Math.round(durationMs)));
  }

  protected drain(): GraphNews | null {
    if (this.#requests.empty && this.#durationMs.empty) return null;
    const counters: Record<string, CounterSample[]> = {};
    if (!this.#requests.empty) counters[GRAPH_REQUESTS_FAMILY] = this.#requests.drain();
    if (!this.#durationMs.empty) counters[GRAPH_DURATION_FAMILY] = this.#durationMs.drain();
    return { counters };
  }

  protected send(batches: Sealed<GraphNews>[]): Promise<GraphCountersView> {
    return this.rpc().sync({ isolate: this.isolate(), batches });
  }
}
