import type { Env } from "../env";
import { poolRpc } from "./stubs";
import type { PoolSpec } from "./types";

/**
 * Tells every pool's object the spec of a config version, so each arms (or stops) its
 * health-check alarm now instead of on the pool's first request. Called when a config
 * is published through the admin endpoint and from the Worker's cron (which covers a
 * fresh deploy and configs pushed straight to KV). An older version never overrides a
 * newer one (the object compares version ids), so calling it late is harmless.
 */
export async function announceSpecs(env: Env, specs: ReadonlyMap<string, PoolSpec>): Promise<void> {
  const results = await Promise.allSettled([...specs.values()].map((spec) => poolRpc(env, spec.pool).adopt(spec)));
  for (const result of results) {
    if (result.status === "rejected") console.error(JSON.stringify({ event: "shared_state_unavailable", what: "announce", message: (result.reason as Error)?.message ?? String(result.reason) }));
  }
}
