import { banditParams } from "../../app/model-call/graph";
import type { BanditAgent } from "../../app/state/bandit-agent";
import type { IsolateState } from "../../app/state/isolate-state";
import { isJsonObject } from "../../lib/json";
import { seldonRows } from "../../core/graph/seldon";
import type { ConfigSnapshot } from "../config-source";
import { parseJsonObject } from "./body";
import { seldonStatus } from "./error-style";
import type { Call } from "./route";

interface Credit {
  graph: string;
  node: string;
  arm: number;
}

/**
 * `POST /feedback` in Seldon's shape `{request, response, reward, truth}`: the reward is
 * credited to each learning router named in `response.meta.routing` (node -> arm), the
 * map the router put into its answer. `response.meta.graph` narrows the lookup when node
 * names repeat across graphs. Rewards count fractionally (reward × rows of the request):
 * a reward is a success rate in [0, 1], and rows are at most MAX_FEEDBACK_ROWS.
 *
 * Every credit is checked before any is queued, so a refused call changes nothing. The
 * credits go to each node's object in this isolate's next batch (src/app/state/
 * bandit-agent.ts), off the response path; this isolate's choices count them at once. A
 * seeded node's feedback is sent before the answer, so its one sequence of choices and
 * credits stays reproducible.
 */
export async function handleFeedback(call: Call<"required">): Promise<Response> {
  const { env, snapshot, ctx } = call;
  const state = call.deps.state;
  const body = parseJsonObject(call.body);
  if (!body.ok) return seldonStatus(body.problem.status, `feedback must be a JSON object {request, response, reward, truth}: ${body.problem.message}`);

  const reward = body.json.reward;
  if (typeof reward !== "number" || !(reward >= 0 && reward <= 1)) return seldonStatus(400, "reward must be a number in [0, 1], a success rate");
  const rows = seldonRows(body.json.request);
  if (!rows.ok) return seldonStatus(400, rows.message);
  const response = body.json.response;
  const meta = isJsonObject(response) && isJsonObject(response.meta) ? response.meta : null;
  if (!meta || !isJsonObject(meta.routing)) {
    return seldonStatus(400, "response.meta.routing is required: send back the response the graph gave you");
  }
  const graphHint = typeof meta.graph === "string" ? meta.graph : null;

  const credits: Credit[] = [];
  for (const [node, arm] of Object.entries(meta.routing)) {
    if (typeof arm !== "number" || !Number.isInteger(arm)) return seldonStatus(400, `response.meta.routing.${node} must be an integer`);
    const found = learningRouters(snapshot, node, graphHint);
    if (found.length > 1) {
      return seldonStatus(400, `node "${node}" is a learning router in several graphs (${found.join(", ")}); include response.meta.graph`);
    }
    if (found.length === 1 && arm >= 0) credits.push({ graph: found[0]!, node, arm });
  }

  const queued: { agent: BanditAgent; arm: number }[] = [];
  for (const credit of credits) {
    const node = snapshot.graphs.get(credit.graph)!.nodes.get(credit.node)!;
    if (credit.arm >= node.steps.length) return seldonStatus(400, `routing.${credit.node} = ${credit.arm}, but the node has ${node.steps.length} branches`);
    const agent = state.bandit(env, credit.graph, credit.node, banditParams(node.router!));
    try {
      agent.check({ arm: credit.arm, reward, rows: rows.rows });
    } catch (error) {
      return seldonStatus(400, `feedback for node "${credit.node}" refused: ${(error as Error).message}`);
    }
    queued.push({ agent, arm: credit.arm });
  }
  for (const { agent, arm } of queued) {
    agent.feedback({ arm, reward, rows: rows.rows });
    agent.nudge(ctx);
  }
  await Promise.all(queued.filter((q) => q.agent.seeded).map((q) => q.agent.flush()));
  return seldonStatus(200, `credited ${credits.length} router${credits.length === 1 ? "" : "s"}`, { meta: { credited: credits } });
}

/** Graphs where `node` is an epsilon-greedy or Thompson-sampling router (optionally only `graph`). */
function learningRouters(snapshot: ConfigSnapshot, node: string, graph: string | null): string[] {
  const names: string[] = [];
  for (const compiled of snapshot.graphs.values()) {
    if (graph !== null && compiled.name !== graph) continue;
    const type = compiled.nodes.get(node)?.router?.type;
    if (type === "epsilon_greedy" || type === "thompson_sampling") names.push(compiled.name);
  }
  return names;
}
