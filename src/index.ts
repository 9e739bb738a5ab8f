import type { Env } from "./env";
import { createApp } from "./http/app";
import { ConfigSource } from "./kv/config-source";
import { cryptoRandom } from "./routing/random";
import { IsolateState } from "./state/isolate-state";

export { PoolState } from "../durable-objects/pool-state";
export { AffinityShard } from "../durable-objects/affinity-shard";
export { BanditState } from "../durable-objects/bandit-state";
export { RouteEnvelope } from "../durable-objects/route-envelope";
export { ProviderQuota } from "../durable-objects/provider-quota";
export { ConcurrencySlots } from "../durable-objects/concurrency-slots";

// Module scope lives as long as the isolate: the parsed config, the random buffer and the
// view of the shared state are shared by every request this isolate serves.
const app = createApp({ configSource: new ConfigSource(), random: cryptoRandom(), state: new IsolateState() });

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(app.scheduled(env)),
} satisfies ExportedHandler<Env>;
