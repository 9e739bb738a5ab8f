import { limitsObjectName } from "../../app/state/object-names";
import { bucketsFor } from "../../core/limits/rules";
import type { UsageFilter } from "../../core/limits/rules";
import { windowAt } from "../../core/limits/windows";
import type { Dimension, LimitCounters, LimitSnapshot } from "../../core/limits/wire";
import type { ConfigSnapshot } from "../../core/targets/snapshot";

/** One dimension of a bucket as the views show it. */
export interface DimensionStanding {
  limit: number;
  window: string;
  spent: number;
  held_by_isolates: number;
  remaining: number;
  resets_at: string | null;
}

/** Twelve significant digits: sums of prices carry binary noise (0.1 + 0.2 is 0.30000000000000004) that no reader should see. */
const tidy = (x: number): number => Number(x.toPrecision(12));

export interface BucketReading {
  bucket: string;
  /** `by`: the key whose end users a per-tenant scope that names no key counts here. */
  scope: { key?: string; team?: string; model?: string; per_tenant?: true; tenant?: string | null; by?: string; spend_window?: string };
  usage: Partial<Record<Dimension, DimensionStanding>>;
  counters: LimitCounters;
}

/**
 * The limit buckets a filter selects (docs/limits.md, "Usage"), each read from its
 * PrincipalLimits object: per limited dimension what was spent in the current window,
 * what isolates hold unspent, what is left and when the window ends, and the bucket's
 * counters. The one reading behind GET /admin/usage, the admin /routing view and
 * /metrics. Names only, never a key. The caller flushes its isolate's reports first.
 */
export async function readBuckets(env: Pick<Cloudflare.Env, "PRINCIPAL_LIMITS">, snapshot: ConfigSnapshot, filter: UsageFilter, now: number): Promise<BucketReading[]> {
  const teams = new Map(snapshot.keyPrincipals.map((k) => [k.principal.key, k.principal.team]));
  const keys = snapshot.keyPrincipals.map((k) => ({ name: k.principal.key, trusted: k.trustsTenantHeader === true }));
  return Promise.all(
    bucketsFor(snapshot.limits, filter, (key) => teams.get(key), keys).map(async (bucket) => {
      const stub = env.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket.id)) as unknown as { snapshot(): Promise<LimitSnapshot> };
      const snap = await stub.snapshot();
      const usage: BucketReading["usage"] = {};
      for (const [dim, limit] of Object.entries(bucket.limits) as [Dimension, NonNullable<(typeof bucket.limits)[Dimension]>][]) {
        const d = snap.dims[dim];
        const spent = d?.spent ?? 0;
        const endsAt = limit.window === "none" ? null : windowAt(limit.window, now, limit.resetAt).endsAt;
        usage[dim] = {
          limit: limit.total,
          window: limit.window,
          spent: tidy(spent),
          held_by_isolates: tidy(d?.granted ?? 0),
          remaining: tidy(Math.max(0, limit.total - spent)),
          resets_at: endsAt === null || endsAt >= Number.MAX_SAFE_INTEGER ? null : new Date(endsAt).toISOString(),
        };
      }
      const { key, team, model, perTenant, spendWindow } = bucket.scope;
      const scope: BucketReading["scope"] = {
        ...(key !== undefined && { key }),
        ...(team !== undefined && { team }),
        ...(model !== undefined && { model }),
        ...(perTenant && { per_tenant: true as const, tenant: filter.tenant ?? null }),
        ...(bucket.by !== undefined && { by: bucket.by }),
        ...(spendWindow !== undefined && { spend_window: spendWindow }),
      };
      // An object stored before counters were kept answers without them.
      const counters = snap.counters ?? { requests: 0, tokens: 0, spend: 0, refusals: {} };
      return { bucket: bucket.id, scope, usage, counters: { ...counters, spend: tidy(counters.spend) } };
    }),
  );
}
