import type { Decision } from "../../../core/routewise/decide";
import { decide } from "../../../core/routewise/decide";
import type { Demand, Envelope, QuotaView, RequestShape, RouteInput } from "../../../core/routewise/types";
import { clock } from "../../../lib/clock";
import type { ModelAgent } from "./model-agent";
import type { QuotaAgent } from "./quota-agent";
import type { SlotAgent } from "./slot-agent";
import type { RouteWiseSpec } from "../../../core/routewise/spec";

/** One RouteWise model's agents in this isolate: its envelope view, and the quotas and slots of its routes. */
export interface RouteWiseAgents {
  model: ModelAgent;
  quotas: Map<string, QuotaAgent>;
  slots: Map<string, SlotAgent>;
}

/** Routes short of envelope_min_samples, with their counts, for the 503's message. */
export function missingCalibration(spec: RouteWiseSpec, model: Pick<ModelAgent, "envelope">): string[] {
  return spec.routes.flatMap((r) => {
    const n = model.envelope(r.id)?.samples ?? 0;
    return n < spec.params.envelope_min_samples ? [`route '${r.id}' (${n})`] : [];
  });
}

/** What a decision reads of the shared state: this isolate's views, or (for /routing) the objects' own answers. */
export interface RouteViews {
  envelope(route: string): Envelope | null;
  quota(route: string, now: number): QuotaView | undefined;
  slots(route: string): { free: number; limit: number } | undefined;
  healthy(route: string, now: number): boolean;
  demand: Demand;
}

export function agentViews(agents: RouteWiseAgents): RouteViews {
  return {
    envelope: (route) => agents.model.envelope(route),
    quota: (route, now) => agents.quotas.get(route)?.quota(now),
    slots: (route) => {
      const slot = agents.slots.get(route);
      return slot && { free: slot.free, limit: slot.limit };
    },
    healthy: (route, now) => agents.model.healthy(route, now),
    demand: agents.model.demand,
  };
}

/** The decision from views as they are now. */
export function decideNow(spec: RouteWiseSpec, views: RouteViews, shape: RequestShape): Decision {
  const now = clock.now();
  const routes: RouteInput[] = spec.routes.map((r) => {
    const quota = views.quota(r.id, now);
    const slots = views.slots(r.id);
    return {
      id: r.id,
      type: r.provider_type,
      pricing: r.pricing,
      envelope: views.envelope(r.id),
      ...(quota && { quota }),
      ...(slots && { slots }),
      healthy: views.healthy(r.id, now),
    };
  });
  return decide({ routes, params: spec.params, request: shape, demand: views.demand });
}

