import { callModel } from "../../app/model-call/call";
import { graphTarget } from "../../core/targets/model-target";
import type { Call } from "./route";

/**
 * `POST /graphs/<name>` (and any subpath, as KServe's router serves every path): runs
 * the graph on the raw body. Errors use KServe's shape.
 */
export async function graphRequest(call: Call<"required">): Promise<Response> {
  const { snapshot, errors } = call;
  const name = call.params.name!;
  const target = graphTarget(snapshot, name);
  if (!target) return errors.reply(404, `no InferenceGraph named "${name}"`, "graph_not_found");
  const outcome = await callModel(
    { env: call.env, ctx: call.ctx, random: call.deps.random, state: call.deps.state, snapshot, trace: call.trace },
    target,
    { dialect: { kind: "graph" }, body: call.body, json: null, request: call.request, bearer: undefined, forced: null, startedAt: call.startedAt, principal: call.principal },
  );
  return outcome.ok ? outcome.response : errors.reply(outcome.status, outcome.message, outcome.code, outcome.headers);
}
