import type { Config } from "../config/schema";
import type { LimitRule } from "../config/limits-schema";
import type { Principal } from "./principal";
import type { BucketLimits, DimensionLimit } from "./wire";

/**
 * One counter a request is charged to: a rule's scope made concrete for a request (with
 * the end user's name when the rule counts tenants apart). Its id names its Durable
 * Object, so it is made of config names and a validated tenant only, never a key.
 */
export interface Bucket {
  id: string;
  limits: BucketLimits;
}

interface Scope {
  key?: string;
  team?: string;
  model?: string;
  perTenant: boolean;
  /** A second spend window on one scope (an hourly cap beside a monthly budget): its own counter, `spend=<window>` in the id. */
  spendWindow?: string;
}

/** The rules of a config, those with one scope merged (the tightest of each dimension wins). */
export interface LimitTable {
  /** `bucket`: the scope's one bucket, made once, when it does not count tenants apart. */
  scopes: { scope: Scope; limits: BucketLimits; bucket?: Bucket }[];
}

export function buildLimitTable(config: Config): LimitTable {
  const byScope = new Map<string, { scope: Scope; limits: BucketLimits; spends: Map<string, DimensionLimit> }>();
  for (const rule of config.limits) {
    const scope: Scope = { ...(rule.key !== undefined && { key: rule.key }), ...(rule.team !== undefined && { team: rule.team }), ...(rule.model !== undefined && { model: rule.model }), perTenant: rule.per_tenant };
    const id = scopeId(scope, undefined);
    const entry = byScope.get(id) ?? { scope, limits: {} as BucketLimits, spends: new Map<string, DimensionLimit>() };
    byScope.set(id, entry);
    for (const [dim, limit] of Object.entries(ruleLimits(rule)) as [keyof BucketLimits, DimensionLimit][]) {
      // Two rules with one scope share one counter: the smaller total (of a spend, in the same window) applies.
      const had = dim === "spend" ? entry.spends.get(spendWindowOf(limit)) : entry.limits[dim];
      if (had !== undefined && had.total <= limit.total) continue;
      if (dim === "spend") entry.spends.set(spendWindowOf(limit), limit);
      else entry.limits[dim] = limit;
    }
  }
  const entries: { scope: Scope; limits: BucketLimits }[] = [];
  for (const { scope, limits, spends } of byScope.values()) {
    // The longest spend window keeps the scope's own counter, whatever the rules' order; each
    // shorter one (an hourly cap beside a monthly budget) counts in one of its own, so both hold.
    const [first, ...others] = [...spends.values()].sort(longestFirst);
    entries.push({ scope, limits: first ? { ...limits, spend: first } : limits });
    for (const spend of others) entries.push({ scope: { ...scope, spendWindow: spendWindowOf(spend) }, limits: { spend } });
  }
  return { scopes: entries.map((entry) => (entry.scope.perTenant ? entry : { ...entry, bucket: { id: scopeId(entry.scope, undefined), limits: entry.limits } })) };
}

const WINDOW_RANK: Record<string, number> = { fixed: 4, month: 3, day: 2, hour: 1 };

/** A fixed budget before a month before a day before an hour; of two fixed budgets, the later reset first. */
function longestFirst(a: DimensionLimit, b: DimensionLimit): number {
  return (WINDOW_RANK[b.window] ?? 0) - (WINDOW_RANK[a.window] ?? 0) || (b.resetAt ?? 0) - (a.resetAt ?? 0);
}

/** A spend's window as an id part: `month`, or `fixed:<reset_at>` (two fixed budgets with other dates are two budgets). */
function spendWindowOf(limit: DimensionLimit): string {
  return limit.window === "fixed" && limit.resetAt !== undefined ? `fixed:${new Date(limit.resetAt).toISOString()}` : limit.window;
}

function ruleLimits(rule: LimitRule): BucketLimits {
  const limits: BucketLimits = {};
  if (rule.requests_per_minute !== undefined) limits.requests = { total: rule.requests_per_minute, window: "minute" };
  if (rule.tokens_per_minute !== undefined) limits.tokens = { total: rule.tokens_per_minute, window: "minute" };
  if (rule.concurrent_requests !== undefined) limits.concurrent = { total: rule.concurrent_requests, window: "none" };
  if (rule.spend !== undefined) {
    limits.spend = { total: rule.spend.amount, window: rule.spend.window, ...(rule.spend.reset_at !== undefined && { resetAt: Date.parse(rule.spend.reset_at) }), warnAt: rule.spend.warn_at };
  }
  return limits;
}

/** The buckets a request of `principal` (none: an open router) for `model` is charged to. */
export function matchingBuckets(table: LimitTable, principal: Principal | undefined, model: string): Bucket[] {
  const out: Bucket[] = [];
  for (const { scope, limits, bucket } of table.scopes) {
    if (scope.key !== undefined && scope.key !== principal?.key) continue;
    if (scope.team !== undefined && scope.team !== principal?.team) continue;
    if (scope.model !== undefined && scope.model !== model) continue;
    out.push(bucket ?? { id: scopeId(scope, principal?.tenant, principal?.key), limits });
  }
  return out;
}

/** What GET /admin/usage selects by: any of a key, a team, a model; a tenant picks a per-tenant bucket. */
export interface UsageFilter {
  key?: string;
  team?: string;
  model?: string;
  tenant?: string;
}

/**
 * The buckets of every rule scope that limits some request the filter describes: a scope
 * matches a field it does not name (`key=alice` is among a model's buckets, since it
 * limits alice's calls to it too), and a key belongs to its team (`?team=research` lists
 * its members' key rules, not other teams' keys'; `?key=alice&team=money` lists nothing
 * when alice is not in money). `teamOf` is a named key's team. A per-tenant scope without
 * a tenant named is its tenant-less bucket: end users are not listed, since no registry
 * of them is kept.
 */
export function bucketsFor(table: LimitTable, filter: UsageFilter, teamOf: (key: string) => string | undefined, keys: readonly { name: string; trusted: boolean }[] = []): (Bucket & { scope: Scope; by?: string })[] {
  // A tenant is named only by a key that may name one: another key's end-user buckets are never charged.
  const trusted = new Set(keys.filter((k) => k.trusted).map((k) => k.name));
  if (filter.tenant !== undefined && filter.key !== undefined && keys.length > 0 && !trusted.has(filter.key)) return [];
  // The team of the requests the filter describes: the filter's, or its key's (none: a key without a team).
  const team = filter.key !== undefined ? (teamOf(filter.key) ?? null) : filter.team;
  if (filter.key !== undefined && filter.team !== undefined && team !== filter.team) return []; // that key's requests are not that team's
  const limitsKey = (key: string) => (filter.key !== undefined ? key === filter.key : team === undefined || teamOf(key) === team);
  return table.scopes
    .filter(({ scope }) => scope.key === undefined || limitsKey(scope.key))
    .filter(({ scope }) => scope.team === undefined || team === undefined || scope.team === team)
    .filter(({ scope }) => filter.model === undefined || scope.model === undefined || scope.model === filter.model)
    .flatMap(({ scope, limits }) => {
      const tenant = scope.perTenant ? filter.tenant : undefined;
      // A per-tenant scope naming no key counts each key's end users apart: one bucket per key the filter admits (none configured: the anonymous one).
      if (!scope.perTenant || scope.key !== undefined || filter.key !== undefined || keys.length === 0) return [{ id: scopeId(scope, tenant, filter.key), limits, scope, ...(filter.key !== undefined && scope.perTenant && scope.key === undefined && { by: filter.key }) }];
      return keys
        .map((k) => k.name)
        .filter((by) => limitsKey(by) && (tenant === undefined || trusted.has(by)))
        .map((by) => ({ id: scopeId(scope, tenant, by), limits, scope, by }));
    });
}

/**
 * `key=alice,model=gpt` — `=` and `,` are in no name, so ids cannot collide. A per-tenant
 * scope that names no key counts each key's end users apart (`by=<key>`): tenant names are
 * each platform's own, and two platforms' "acme" are two end users. A key that names no
 * tenant is its own end user there.
 */
function scopeId(scope: Scope, tenant: string | undefined, by?: string): string {
  const parts: string[] = [];
  if (scope.key !== undefined) parts.push(`key=${scope.key}`);
  if (scope.team !== undefined) parts.push(`team=${scope.team}`);
  if (scope.model !== undefined) parts.push(`model=${scope.model}`);
  if (scope.perTenant) parts.push(tenant === undefined ? "tenant" : `tenant=${tenant}`);
  if (scope.perTenant && scope.key === undefined && by !== undefined) parts.push(`by=${by}`);
  if (scope.spendWindow !== undefined) parts.push(`spend=${scope.spendWindow}`);
  return parts.join(",");
}
