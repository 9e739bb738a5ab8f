import { parseUsageQuery } from "../../core/limits/usage-query";
import type { KnownNames } from "../../core/limits/usage-query";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import { clock } from "../../lib/clock";
import { json } from "./json-response";
import { readBuckets } from "./limit-buckets";
import type { Call } from "./route";

/**
 * `GET /admin/usage[?key=&team=&model=&tenant=&window=]`: each limit bucket the filter
 * selects (docs/limits.md), with its limits and, per dimension, what was spent in the
 * current window, what isolates hold unspent, what is left and when the window ends, read
 * from its Durable Object after this isolate's own reports are flushed; `window` keeps the
 * dimensions counted in it. Names only, never a key. A query it does not understand is a
 * 400 naming the parameter.
 */
export async function usageView(call: Call<"required">): Promise<Response> {
  const query = parseUsageQuery(new URL(call.request.url).searchParams, knownNames(call.snapshot));
  if (!query.ok) return call.errors.reply(400, query.message, "invalid_parameter", {}, query.param);
  const { filter, window } = query;
  await call.deps.state.flush();
  const now = clock.now();
  const buckets = (await readBuckets(call.env, call.snapshot, filter, now)).flatMap(({ bucket, scope, usage }) => {
    if (window === undefined) return [{ bucket, scope, usage }];
    const kept = Object.fromEntries(Object.entries(usage).filter(([, d]) => d.window === window));
    return Object.keys(kept).length > 0 ? [{ bucket, scope, usage: kept }] : [];
  });
  return json({ at: new Date(now).toISOString(), filter: { ...filter, ...(window !== undefined && { window }) }, buckets });
}

function knownNames(snapshot: ConfigSnapshot): KnownNames {
  const principals = snapshot.keyPrincipals.map((k) => k.principal);
  return {
    keys: new Set(principals.map((p) => p.key)),
    teams: new Set(principals.flatMap((p) => (p.team === undefined ? [] : [p.team]))),
    models: new Set([...Object.keys(snapshot.config.models), ...snapshot.graphs.keys()]),
  };
}
