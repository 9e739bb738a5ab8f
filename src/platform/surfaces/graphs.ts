import type { Env } from "../env";
import { runGraph } from "../../core/graph/executor";
import { graphIO } from "../../app/model-call/graph";
import { stepHeaders } from "../../core/upstream/propagate";
import { graphResponse } from "./graph-response";
import type { ConfigSource } from "../config-source";
import type { RandomSource } from "../../lib/random";
import type { IsolateState } from "../../app/state/isolate-state";
import { KSERVE_GRAPH_ERRORS } from "./error-style";
import { decodeSegment, openRequest } from "./preamble";

export interface GraphDeps {
  configSource: ConfigSource;
  random: RandomSource;
  state: IsolateState;
}

/**
 * `POST /graphs/<name>` (and any subpath, as KServe's router serves every path): runs
 * the graph on the raw body. `rawName` is still percent-encoded. Errors use KServe's shape.
 */
export async function handleGraphRequest(request: Request, env: Env, ctx: ExecutionContext, rawName: string, deps: GraphDeps): Promise<Response> {
  const startedAt = Date.now();
  const errors = KSERVE_GRAPH_ERRORS;
  const opened = await openRequest(request, env, deps.configSource, errors, { auth: "client", body: true });
  if (!opened.ok) return opened.response;
  const { snapshot, body } = opened;
  const name = decodeSegment(rawName);
  if (name === null) return errors.reply(400, "the graph name in the path is not valid percent-encoding", "invalid_path");
  const graph = snapshot.graphs.get(name);
  if (!graph) return errors.reply(404, `no InferenceGraph named "${name}"`, "graph_not_found");

  const headers = stepHeaders(request.headers, snapshot.headerPatterns, snapshot.clientKeyDigests.length > 0);
  const io = graphIO({ env, ctx, random: deps.random, state: deps.state, snapshot, graph: name, request, headers, startedAt });
  return graphResponse(await runGraph(graph, body, io, request.signal), name);
}
