import type { UsageFilter } from "../../core/limits/rules";
import { clock } from "../../lib/clock";
import { json } from "./json-response";
import { readBuckets } from "./limit-buckets";
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
  const buckets = (await readBuckets(call.env, call.snapshot, filter, now)).map(({ bucket, scope, usage }) => ({ bucket, scope, usage }));
  return json({ at: new Date(now).toISOString(), filter, buckets });
}
