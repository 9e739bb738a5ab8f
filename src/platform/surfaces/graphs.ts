import { callModel } from "../../app/model-call/call";
import type { IsolateState } from "../../app/state/isolate-state";
import { graphTarget } from "../../core/targets/model-target";
import type { RandomSource } from "../../lib/random";
import type { ConfigSource } from "../config-source";
import type { Env } from "../env";
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
  const target = graphTarget(snapshot, name);
  if (!target) return errors.reply(404, `no InferenceGraph named "${name}"`, "graph_not_found");
  const outcome = await callModel(
    { env, ctx, random: deps.random, state: deps.state, snapshot },
    target,
    { dialect: { kind: "graph" }, body, json: null, request, bearer: undefined, forced: null, startedAt },
  );
  return outcome.ok ? outcome.response : errors.reply(outcome.status, outcome.message, outcome.code, outcome.headers);
}
