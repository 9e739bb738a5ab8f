/**
 * What a request's trace says of the model call (docs/telemetry.md): the GenAI request
 * attributes on the server span, and the routing decision's facts (pool: policy,
 * candidates and why each was left out, pin; RouteWise: each route's verdict, the split
 * and the budget). Numbers and ids only: never prompt or completion content.
 */
import type { Decision } from "../../core/routewise/decide";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { askedOutputTokens } from "../../core/routewise/tokens";
import type { Attributes } from "../../core/telemetry/span";
import type { ModelTarget } from "../../core/targets/model-target";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import type { Span } from "../telemetry/trace";
import type { RoutingSession, SessionInput } from "./pool-session";

/** The API a request came in on (./call.ts's Dialect, by shape: call.ts imports this file). */
type Dialect = { kind: "openai"; apiPath: string } | { kind: "kserve" | "graph" };

/** The model is known: its opt-out (or its graph's), and the GenAI request attributes on the server span. */
export function traceModel(span: Span | undefined, snapshot: ConfigSnapshot, target: ModelTarget, dialect: Dialect, json: Record<string, unknown> | null): void {
  if (!span) return;
  if (snapshot.config.models[target.model]?.telemetry === false || (target.kind === "graph" && snapshot.config.graphs[target.graph.name]?.telemetry === false)) {
    span.trace.optOut();
    return;
  }
  const operation = operationOf(dialect);
  // A graph's steps are its own calls, not requests for the model: their attempts carry no GenAI request of it.
  if (target.kind !== "graph") span.trace.genAi = { operation, model: target.model };
  const asked = json ? askedOutputTokens(json) : null;
  span.set({
    "gen_ai.operation.name": operation,
    "gen_ai.request.model": target.model,
    ...(asked?.ok && asked.tokens !== null && { "gen_ai.request.max_tokens": asked.tokens }),
    "switchyard.target.kind": target.kind,
  });
}

/** GenAI's operation names where one fits; the router's own words for KServe and graphs. */
function operationOf(dialect: Dialect): string {
  if (dialect.kind === "openai") return dialect.apiPath.endsWith("/embeddings") ? "embeddings" : dialect.apiPath.endsWith("/completions") && !dialect.apiPath.endsWith("/chat/completions") ? "text_completion" : "chat";
  return dialect.kind === "kserve" ? "predict" : "graph";
}

/** A pool's decision: the policy, every replica and why it is not in the order, the order, the pin. */
export function poolDecision(input: SessionInput, session: RoutingSession): Attributes {
  const { route, snapshot } = input;
  const order = session.candidates.map((r) => r.id);
  const shared = snapshot.config.routing.shared_state ? snapshot.poolSpecs.get(route.pool) : undefined;
  const agent = shared ? input.state.pool(input.env, shared) : null;
  const routable = agent ? new Set(agent.routable(Date.now())) : null;
  const inOrder = new Set(order);
  const left = route.replicas.filter((r) => !inOrder.has(r.id)).map((r) => `${r.id}:${r.weight === 0 ? "weight_0" : routable && !routable.has(r.id) ? "circuit_open" : session.refused ? "refused" : "not_chosen"}`);
  return {
    "switchyard.pool": route.pool,
    "switchyard.policy": snapshot.config.pools[route.pool]?.policy ?? "weighted",
    "switchyard.candidates": route.replicas.map((r) => r.id),
    "switchyard.order": order,
    "switchyard.filtered": left,
    ...(agent && { "switchyard.in_flight": order.map((id) => `${id}:${agent.load(id)}`) }),
    "switchyard.pin": session.pin ?? (input.forced !== null ? "forced" : "none"),
    ...(session.refused && { "switchyard.refused": session.refused.reason }),
    ...(session.empty && { "switchyard.empty": session.empty }),
    ...(session.sloMeets !== undefined && { "switchyard.slo_meets": session.sloMeets ? [...session.sloMeets] : [] }),
  };
}

/** A RouteWise decision: each route's verdict and cost, the linear program's split and budget, the order tried. */
export function routewiseDecision(spec: RouteWiseSpec, decision: Decision, order: readonly string[]): Attributes {
  const { allocation } = decision;
  return {
    "switchyard.policy": "routewise",
    "switchyard.candidates": spec.routes.map((r) => r.id),
    "switchyard.filtered": decision.routes.filter((r) => !r.feasible).map((r) => `${r.id}:${r.why}`),
    "switchyard.routewise.split": decision.routes.map((r) => `${r.id}=${round(r.fraction)}`),
    "switchyard.routewise.expected_cost": decision.routes.map((r) => `${r.id}=${round(r.expectedCost)}`),
    "switchyard.routewise.budget": allocation.budget,
    "switchyard.routewise.cheapest": allocation.cheapest,
    "switchyard.routewise.dearest": allocation.dearest,
    "switchyard.routewise.slo_relaxed": decision.sloRelaxed,
    "switchyard.order": [...order],
  };
}

const round = (x: number) => Number(x.toPrecision(6));
