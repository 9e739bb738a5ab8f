import { limitsObjectName } from "../../app/state/object-names";
import { bucketsFor } from "../../core/limits/rules";
import type { UsageFilter } from "../../core/limits/rules";
import { windowAt } from "../../core/limits/windows";
import type { LimitSnapshot } from "../../core/limits/wire";
import { clock } from "../../lib/clock";
import { json } from "./json-response";
import type { Call } from "./route";

const FILTERS = ["key", "team", "model", "tenant"] as const;

/**
 * `GET /admin/usage[?key=&team=&model=&tenant=]`: each limit bucket the filter selects
 * (docs/limits.md), with its limits and, per dimension, what was spent in the current
 * window, what isolates hold unspent, what is left and when the window ends, read from
 * its Durable Object after this isolate's own reports are flushed. Names only, never a key.
 */
export async function usageView(call: Call<"required">): Promise<Response> {
  const params = new URL(call.request.url).searchParams;
  const filter: UsageFilter = {};
  for (const name of FILTERS) {
    const value = params.get(name);
    if (value !== null && value !== "") filter[name] = value;
  }
  await call.deps.state.flush();
  const now = clock.now();
  const buckets = await Promise.all(
    bucketsFor(call.snapshot.limits, filter, call.snapshot.keyPrincipals.find((k) => k.principal.key === filter.key)?.principal.team).map(async (bucket) => {
      const stub = call.env.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket.id)) as unknown as { snapshot(): Promise<LimitSnapshot> };
      const snap = await stub.snapshot();
      const usage: Record<string, unknown> = {};
      for (const [dim, limit] of Object.entries(bucket.limits)) {
        const d = snap.dims[dim as keyof LimitSnapshot["dims"]];
        const spent = d?.spent ?? 0;
        const held = d?.granted ?? 0;
        const endsAt = limit.window === "none" ? null : windowAt(limit.window, now, limit.resetAt).endsAt;
        usage[dim] = {
          limit: limit.total,
          window: limit.window,
          spent,
          held_by_isolates: held,
          remaining: Math.max(0, limit.total - spent),
          resets_at: endsAt === null || endsAt >= Number.MAX_SAFE_INTEGER ? null : new Date(endsAt).toISOString(),
        };
      }
      const { key, team, model, perTenant } = bucket.scope;
      return { bucket: bucket.id, scope: { ...(key !== undefined && { key }), ...(team !== undefined && { team }), ...(model !== undefined && { model }), ...(perTenant && { per_tenant: true, tenant: filter.tenant ?? null }) }, usage };
    }),
  );
  return json({ at: new Date(now).toISOString(), filter, buckets });
}
