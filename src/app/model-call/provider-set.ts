import { estimateTokens } from "../../core/routewise/tokens";
import type { StateBindings as Env } from "../state/bindings";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import type { RandomSource } from "../../lib/random";
import { routeOrder } from "../../core/routewise/decide";
import type { RequestShape } from "../../core/routewise/types";
import type { IsolateState } from "../state/isolate-state";
import type { QuotaAgent } from "../state/routewise/quota-agent";
import type { SlotAgent } from "../state/routewise/slot-agent";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import type { RouteWiseAgents } from "../state/routewise/views";
import { agentViews, decideNow, missingCalibration } from "../state/routewise/views";
import type { PoolOutcome } from "./pool";
import type { RouteWiseCall } from "./provider-legs";
import { Run } from "./provider-legs";

export type { RouteWiseCall };


/**
 * A request to a RouteWise model. The isolate's views (envelopes, quotas, slots) feed the
 * decision (src/core/routewise/decide.ts); the routes are tried in its order, one
 * exchange each, with an optional hedge; what each answer cost is read from its usage as
 * it streams and reported in the next batch. In steady state nothing here awaits an
 * object: only a first request (no view yet) and a slot miss do.
 */
export async function callRouteWise(call: RouteWiseCall): Promise<PoolOutcome> {
  const { spec, ctx } = call;
  const agents = agentsFor(call);
  await Promise.all([agents.model.ready(ctx), ...[...new Set(agents.quotas.values())].map((q) => q.ready(ctx)), ...[...new Set(agents.slots.values())].map((s) => s.ready(ctx))]);

  if (spec.quotaBearing && !agents.model.hasView) {
    // Without the envelope this isolate cannot tell whether the model is calibrated: say so, rather than "uncalibrated".
    return { ok: false, status: 503, code: "routewise_state_unavailable", message: `Model '${spec.model}': its latency envelope could not be read from its Durable Object just now; retry shortly`, attempts: [] };
  }
  const uncalibrated = spec.quotaBearing ? missingCalibration(spec, agents.model) : [];
  if (uncalibrated.length > 0) {
    return {
      ok: false,
      status: 503,
      code: "routewise_uncalibrated",
      message: `Model '${spec.model}' is not calibrated: it has quota routes, and ${uncalibrated.join(", ")} ${uncalibrated.length === 1 ? "has" : "have"} fewer than envelope_min_samples (${spec.params.envelope_min_samples}) latency samples. Seed them with \`switchyard calibrate\` or POST /admin/routewise/${spec.model}/calibrate`,
      attempts: [],
    };
  }

  const shape = requestShape(call);
  const decision = decideNow(spec, agentViews(agents), shape);
  for (const r of decision.routes) {
    if (r.why === "quota_exhausted") {
      const quota = agents.quotas.get(r.id);
      quota?.short();
      quota?.nudge(ctx);
    }
  }
  const order = routeOrder(decision, call.random);
  if (order.length === 0) {
    const why = decision.routes.map((r) => `${r.id} (${r.why ?? "not chosen"})`).join(", ");
    return { ok: false, status: 503, code: "no_feasible_route", message: `No route of model '${spec.model}' can take this request now: ${why}`, attempts: [] };
  }
  agents.model.routed();
  return new Run(call, agents, shape, order, new Map(decision.routes.map((r) => [r.id, r.outputTokens]))).go();
}

function agentsFor(call: RouteWiseCall): RouteWiseAgents {
  const { env, spec, state } = call;
  const quotas = new Map<string, QuotaAgent>();
  const slots = new Map<string, SlotAgent>();
  for (const [route, q] of spec.quotas) quotas.set(route, state.quota(env, q));
  for (const [route, s] of spec.slots) slots.set(route, state.slots(env, s.id, s.limit));
  return { model: state.routewise(env, spec.model, spec.settings), quotas, slots };
}

function requestShape(call: RouteWiseCall): RequestShape {
  const max = call.json.max_completion_tokens ?? call.json.max_tokens;
  return { promptTokens: estimateTokens(call.promptChars), maxTokens: typeof max === "number" && Number.isInteger(max) && max > 0 ? max : null };
}
