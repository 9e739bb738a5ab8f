import type { Env } from "./platform/env";
import { createApp } from "./platform/surfaces/app";
import { ConfigSource } from "./platform/config-source";
import { cryptoRandom } from "./lib/random";
import { IsolateState } from "./app/state/isolate-state";
import { warmUpConfigPath } from "./platform/warm-up";

export { PoolState } from "./platform/objects/pool-state";
export { AffinityShard } from "./platform/objects/affinity-shard";
export { BanditState } from "./platform/objects/bandit-state";
export { RouteEnvelope } from "./platform/objects/route-envelope";
export { ProviderQuota } from "./platform/objects/provider-quota";
export { ConcurrencySlots } from "./platform/objects/concurrency-slots";
export { PrincipalLimits } from "./platform/objects/principal-limits";
export { GraphCounters } from "./platform/objects/graph-counters";

// Module scope lives as long as the isolate: the parsed config, the random buffer and the
// view of the shared state are shared by every request this isolate serves.
warmUpConfigPath(); // at start, off the first request's path: see platform/warm-up.ts
const app = createApp({ configSource: new ConfigSource(), random: cryptoRandom(), state: new IsolateState() });

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(app.scheduled(env)),
} satisfies ExportedHandler<Env>;
