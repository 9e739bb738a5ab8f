import type { StateBindings as Env } from "./bindings";
import { PinCache } from "../../core/affinity/pins";
import { RecentGraphRuns } from "../../core/graph/recent-runs";
import { PoolAgent, SYNC_INTERVAL_MS } from "./pool-agent";
import { ShardAgent } from "./shard-agent";
import { waitAtMost } from "./sync-loop";
import { banditRpc, poolRpc, shardRpc } from "./stubs";
import { BanditAgent } from "./bandit-agent";
import type { BanditParams } from "../../core/graph/bandits";
import { banditObjectName } from "./object-names";
import type { PoolSpec } from "../../core/pool/wire";
import { ModelAgent } from "./routewise/model-agent";
import { QuotaAgent } from "./routewise/quota-agent";
import { SlotAgent } from "./routewise/slot-agent";
import { envelopeRpc, quotaRpc, slotsRpc } from "./routewise/stubs";
import type { EnvelopeSettings, QuotaSpec } from "../../core/routewise/wire";
import type { BucketLimits } from "../../core/limits/wire";
import type { LimitsRpc } from "./limits/limit-agent";
import { LimitAgent } from "./limits/limit-agent";
import { withSimulatedRtt } from "./stubs";
import { graphCountersObjectName, limitsObjectName } from "./object-names";
import type { GraphCountersRpc } from "./graph-counters-agent";
import { GraphCountersAgent } from "./graph-counters-agent";

const FLUSH_TIMEOUT_MS = 2_000; // a read that flushes first (/metrics, /routing) waits at most this long for the objects

/**
 * Everything one isolate knows about the shared state: an agent (./state-client.ts) per
 * pool, affinity shard, RouteWise model, quota and slots, and bandit node, and its pin
 * cache. Lives in module scope, so it lasts as long as the isolate; the Durable Objects
 * stay the truth it converges to.
 */
export class IsolateState {
  readonly pins = new PinCache();
  /** Each graph's last runs here, for /routing and the dashboard. */
  readonly graphRuns = new RecentGraphRuns();
  #id: string | null = null;
  #env: Env | null = null;
  #pools = new Map<string, PoolAgent>();
  #shards = new Map<number, ShardAgent>();
  #models = new Map<string, ModelAgent>();
  #quotas = new Map<string, QuotaAgent>();
  #slots = new Map<string, SlotAgent>();
  #bandits = new Map<string, BanditAgent>();
  #limits = new Map<string, LimitAgent>();
  #graphs = new Map<string, GraphCountersAgent>();
  #disposed = false;

  /** Random per isolate; drawn on first use, because workerd forbids randomness at startup. */
  get id(): string {
    return (this.#id ??= crypto.randomUUID());
  }

  pool(env: Env, spec: PoolSpec): PoolAgent {
    this.#env = env;
    let agent = this.#pools.get(spec.pool);
    if (!agent) {
      agent = new PoolAgent(() => this.id, spec, () => poolRpc(this.#env!, spec.pool));
      if (this.#disposed) agent.dispose();
      this.#pools.set(spec.pool, agent);
    }
    agent.update(spec);
    return agent;
  }

  /** The agent of a pool this isolate has routed to, if any (for /routing). */
  knownPool(pool: string): PoolAgent | undefined {
    return this.#pools.get(pool);
  }

  shard(env: Env, index: number): ShardAgent {
    this.#env = env;
    let agent = this.#shards.get(index);
    if (!agent) {
      agent = new ShardAgent(() => this.id, index, () => shardRpc(this.#env!, index), this.pins, SYNC_INTERVAL_MS);
      if (this.#disposed) agent.dispose();
      this.#shards.set(index, agent);
    }
    return agent;
  }

  /** A RouteWise model's envelope view and reports. */
  routewise(env: Env, model: string, settings: EnvelopeSettings): ModelAgent {
    this.#env = env;
    return this.#agent(this.#models, model, () => new ModelAgent(() => this.id, model, settings, () => envelopeRpc(this.#env!, model)), (a) => a.update(settings));
  }

  quota(env: Env, spec: QuotaSpec): QuotaAgent {
    this.#env = env;
    return this.#agent(this.#quotas, spec.id, () => new QuotaAgent(() => this.id, spec, () => quotaRpc(this.#env!, spec.id)), (a) => a.update(spec));
  }

  slots(env: Env, id: string, limit: number): SlotAgent {
    this.#env = env;
    return this.#agent(this.#slots, id, () => new SlotAgent(() => this.id, id, limit, () => slotsRpc(this.#env!, id)), (a) => a.update(limit));
  }

  /** A limit bucket's grants and usage reports (src/core/limits/rules.ts names buckets). */
  limits(env: Env, bucket: string, limits: BucketLimits): LimitAgent {
    this.#env = env;
    const rpc = () => withSimulatedRtt(this.#env!.PRINCIPAL_LIMITS.getByName(limitsObjectName(bucket)) as unknown as LimitsRpc, this.#env!);
    return this.#agent(this.#limits, bucket, () => new LimitAgent(() => this.id, bucket, limits, rpc), (a) => a.update(limits));
  }

  /** The limit agents this isolate has used (for tests and views). */
  get limitAgents(): ReadonlyMap<string, LimitAgent> {
    return this.#limits;
  }

  /** A bandit router node's arms and feedback (graph requests and POST /feedback). */
  bandit(env: Env, graph: string, node: string, params: BanditParams): BanditAgent {
    this.#env = env;
    const name = banditObjectName(graph, node);
    return this.#agent(this.#bandits, name, () => new BanditAgent(() => this.id, name, params, () => banditRpc(this.#env!, graph, node)), (a) => a.update(params));
  }

  /** A graph's request counters (its models' requests: status and duration). */
  graphCounters(env: Env, graph: string): GraphCountersAgent {
    this.#env = env;
    const rpc = () => withSimulatedRtt(this.#env!.GRAPH_COUNTERS.getByName(graphCountersObjectName(graph)) as unknown as GraphCountersRpc, this.#env!);
    return this.#agent(this.#graphs, graph, () => new GraphCountersAgent(() => this.id, graph, rpc), () => {});
  }

  /** The RouteWise agents this isolate has used, for /routing. */
  get routewiseAgents(): { models: ReadonlyMap<string, ModelAgent>; quotas: ReadonlyMap<string, QuotaAgent>; slots: ReadonlyMap<string, SlotAgent> } {
    return { models: this.#models, quotas: this.#quotas, slots: this.#slots };
  }

  #agent<A extends { dispose(): void }>(agents: Map<string, A>, key: string, create: () => A, update: (agent: A) => void): A {
    let agent = agents.get(key);
    if (!agent) {
      agent = create();
      if (this.#disposed) agent.dispose();
      agents.set(key, agent);
    }
    update(agent);
    return agent;
  }

  /** Sends every pending report now, so a read that follows sees this isolate's traffic. */
  async flush(): Promise<void> {
    const all = [...this.#pools.values(), ...this.#shards.values(), ...this.#models.values(), ...this.#quotas.values(), ...this.#bandits.values(), ...this.#limits.values(), ...this.#graphs.values()].map((agent) => agent.flush());
    await waitAtMost(Promise.all(all), FLUSH_TIMEOUT_MS);
  }

  /** Stops all reporting, as an evicted isolate would: its in-flight report then expires at the objects. */
  dispose(): void {
    this.#disposed = true;
    for (const agent of [...this.#pools.values(), ...this.#shards.values(), ...this.#models.values(), ...this.#quotas.values(), ...this.#slots.values(), ...this.#bandits.values(), ...this.#limits.values(), ...this.#graphs.values()]) agent.dispose();
  }
}
