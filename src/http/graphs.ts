import type { Env } from "../env";
import { runGraph } from "../graph/executor";
import { graphIO } from "../graph/io";
import { stepHeaders } from "../graph/propagate";
import { graphResponse, kserveError } from "../graph/response";
import type { ConfigSource } from "../kv/config-source";
import type { RandomSource } from "../routing/random";
import { clientKeyProblem } from "./client-auth";
import { readBounded } from "./body";

export interface GraphDeps {
  configSource: ConfigSource;
  random: RandomSource;
}

/**
 * `POST /graphs/<name>` (and any subpath, as KServe's router serves every path): runs
 * the graph on the raw body. Errors use KServe's shape.
 */
export async function handleGraphRequest(request: Request, env: Env, ctx: ExecutionContext, name: string, deps: GraphDeps): Promise<Response> {
  const state = await deps.configSource.get(env);
  const snapshot = state.current;
  if (!snapshot) return kserveError(503, "router has no valid config");
  const problem = await clientKeyProblem(request, snapshot);
  if (problem) return kserveError(401, problem, { "www-authenticate": 'Bearer realm="switchyard"' });
  const graph = snapshot.graphs.get(name);
  if (!graph) return kserveError(404, `no InferenceGraph named "${name}"`);

  const limit = snapshot.config.routing.max_body_bytes;
  const body = await readBounded(request, limit);
  if (!body) return kserveError(413, `request body exceeds the configured limit of ${limit} bytes`);

  const run = await runGraph(
    graph,
    body,
    graphIO({ env, headers: stepHeaders(request.headers, snapshot.headerPatterns, snapshot.clientKeyDigests.length > 0), random: deps.random, waitUntil: (p) => ctx.waitUntil(p) }),
    request.signal,
  );
  return graphResponse(run, name);
}

