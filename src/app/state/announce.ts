import type { StateBindings as Env } from "./bindings";
import { poolRpc } from "./stubs";
import type { PoolSpec } from "../../core/pool/wire";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { quotaRpc } from "./routewise/stubs";

/**
 * Tells every pool's object the spec of a config version, so each arms (or stops) its
 * health-check alarm now instead of on the pool's first request. Called when a config
 * is published through the admin endpoint and from the Worker's cron (which covers a
 * fresh deploy and configs pushed straight to KV). An older version never overrides a
 * newer one (the object compares version ids), so calling it late is harmless.
 */
export async function announceSpecs(env: Env, specs: ReadonlyMap<string, PoolSpec>): Promise<void> {
  logFailures(await Promise.allSettled([...specs.values()].map((spec) => poolRpc(env, spec.pool).adopt(spec))));
}

/**
 * Tells every RouteWise quota's object its terms, so it polls its usage API now and on
 * its alarm from then on: a quota route is usable (not failed safe as never polled) from
 * the model's first request. Called where announceSpecs is, whatever `shared_state` says.
 */
export async function announceQuotas(env: Env, models: ReadonlyMap<string, RouteWiseSpec>): Promise<void> {
  const quotas = new Map([...models.values()].flatMap((m) => [...m.quotas.values()].map((q) => [q.id, q] as const)));
  logFailures(await Promise.allSettled([...quotas.values()].map((spec) => quotaRpc(env, spec.id).adopt(spec))));
}

function logFailures(results: PromiseSettledResult<unknown>[]): void {
  for (const result of results) {
    if (result.status === "rejected") console.error(JSON.stringify({ event: "shared_state_unavailable", what: "announce", message: (result.reason as Error)?.message ?? String(result.reason) }));
  }
}
