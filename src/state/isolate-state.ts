import type { Env } from "../env";
import { PinCache } from "./pin-cache";
import { PoolAgent, SYNC_INTERVAL_MS } from "./pool-agent";
import { ShardAgent } from "./shard-agent";
import { poolRpc, shardRpc } from "./stubs";
import type { PoolSpec } from "./types";

const FLUSH_TIMEOUT_MS = 2_000; // a read that flushes first (/metrics, /routing) waits at most this long for the objects

/**
 * Everything one isolate knows about the shared state: an agent per pool, an agent per
 * affinity shard, and its pin cache. Lives in module scope, so it lasts as long as the
 * isolate; the Durable Objects stay the truth it converges to.
 */
export class IsolateState {
  readonly pins = new PinCache();
  #id: string | null = null;
  #env: Env | null = null;
  #pools = new Map<string, PoolAgent>();
  #shards = new Map<number, ShardAgent>();
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
      agent = new ShardAgent(() => shardRpc(this.#env!, index), this.pins, SYNC_INTERVAL_MS);
      if (this.#disposed) agent.dispose();
      this.#shards.set(index, agent);
    }
    return agent;
  }

  /** Sends every pending report now, so a read that follows sees this isolate's traffic. */
  async flush(): Promise<void> {
    const all = [...this.#pools.values(), ...this.#shards.values()].map((agent) => agent.flush());
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.all(all), new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_TIMEOUT_MS)))]);
    if (timer !== undefined) clearTimeout(timer);
  }

  /** Stops all reporting, as an evicted isolate would: its in-flight report then expires at the objects. */
  dispose(): void {
    this.#disposed = true;
    for (const agent of [...this.#pools.values(), ...this.#shards.values()]) agent.dispose();
  }
}
