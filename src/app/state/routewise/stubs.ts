/** The RouteWise objects' RPC surfaces, and their stubs (as ../stubs.ts does for pools and pins). */
import type { StateBindings as Env } from "../bindings";
import { withSimulatedRtt } from "../stubs";
import { envelopeObjectName, quotaObjectName, slotsObjectName } from "../object-names";
import type { EnvelopeSettings, EnvelopeSnapshot, EnvelopeState, EnvelopeSync, EnvelopeView, QuotaAnswer, QuotaSpec, QuotaState, QuotaSync, RouteSample, SlotGrant, SlotRequest, SlotSync } from "../../../core/routewise/wire";

export interface EnvelopeRpc {
  sync(request: EnvelopeSync): Promise<EnvelopeView>;
  seed(settings: EnvelopeSettings, samples: RouteSample[]): Promise<EnvelopeState>;
  snapshot(): Promise<EnvelopeSnapshot>;
}

export interface QuotaRpc {
  sync(request: QuotaSync): Promise<QuotaAnswer>;
  /** The quota's terms, told without a request (a config published, the cron): it polls now. */
  adopt(spec: QuotaSpec): Promise<QuotaState>;
  snapshot(): Promise<QuotaState>;
}

export interface SlotsRpc {
  acquire(request: SlotRequest): Promise<SlotGrant>;
  sync(request: SlotSync): Promise<SlotGrant>;
  snapshot(): Promise<{ granted: number; isolates: number }>;
}

export const envelopeRpc = (env: Env, model: string): EnvelopeRpc => withSimulatedRtt(env.ROUTE_ENVELOPE.getByName(envelopeObjectName(model)) as unknown as EnvelopeRpc, env);
export const quotaRpc = (env: Env, id: string): QuotaRpc => withSimulatedRtt(env.PROVIDER_QUOTA.getByName(quotaObjectName(id)) as unknown as QuotaRpc, env);
export const slotsRpc = (env: Env, id: string): SlotsRpc => withSimulatedRtt(env.CONCURRENCY_SLOTS.getByName(slotsObjectName(id)) as unknown as SlotsRpc, env);
