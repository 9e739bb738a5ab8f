/**
 * The seam between the Worker and its Durable Objects: every stub the router uses comes
 * from here. `SWITCHYARD_SIMULATED_DO_RTT_MS` (a Worker var, for `npm run bench
 * -- --do-rtt-ms N`) delays every call by that round trip, half before and half after,
 * so a local run shows what a distant object would cost.
 */
import type { StateBindings as Env } from "./bindings";
import type { BanditParams, BanditStateSnapshot } from "../../core/graph/bandits";
import type { BanditSync, BanditView } from "../../core/graph/bandit-wire";
import type { PinClaim, PinResult, ShardSnapshot, ShardSync, ShardSyncResult } from "../../core/affinity/wire";
import type { PoolSnapshot, PoolSpec, PoolSyncRequest, PoolView, ProbeRequest, ProbeResult } from "../../core/pool/wire";
import { banditObjectName, poolObjectName, shardObjectName } from "./object-names";

/** The pool object's RPC surface (src/platform/objects/pool-state.ts). */
export interface PoolRpc {
  sync(request: PoolSyncRequest): Promise<PoolView>;
  adopt(spec: PoolSpec): Promise<void>;
  admitProbe(request: ProbeRequest): Promise<ProbeResult>;
  snapshot(): Promise<PoolSnapshot>;
}

/** An affinity shard's RPC surface (src/platform/objects/affinity-shard.ts). */
export interface ShardRpc {
  claim(claim: PinClaim): Promise<PinResult>;
  sync(request: ShardSync): Promise<ShardSyncResult>;
  snapshot(): Promise<ShardSnapshot>;
}

/** A bandit router node's RPC surface (src/platform/objects/bandit-state.ts). */
export interface BanditRpc {
  /** A seeded node's choice (the object holds its one sequence). */
  choose(params: BanditParams): Promise<{ arm: number }>;
  sync(request: BanditSync): Promise<BanditView>;
  snapshot(): Promise<BanditStateSnapshot | null>;
}

export function poolRpc(env: Env, pool: string): PoolRpc {
  return withSimulatedRtt(env.POOL_STATE.getByName(poolObjectName(pool)) as unknown as PoolRpc, env);
}

export function shardRpc(env: Env, shard: number): ShardRpc {
  return withSimulatedRtt(env.AFFINITY.getByName(shardObjectName(shard)) as unknown as ShardRpc, env);
}

export function banditRpc(env: Env, graph: string, node: string): BanditRpc {
  return withSimulatedRtt(env.BANDIT.getByName(banditObjectName(graph, node)) as unknown as BanditRpc, env);
}

export function withSimulatedRtt<T extends object>(stub: T, env: Env): T {
  const rtt = Number(env.SWITCHYARD_SIMULATED_DO_RTT_MS ?? 0);
  if (!(rtt > 0)) return stub;
  const half = () => new Promise((resolve) => setTimeout(resolve, rtt / 2));
  return new Proxy(stub, {
    get(target, name) {
      const method = Reflect.get(target, name) as unknown;
      if (typeof method !== "function") return method;
      return async (...args: unknown[]) => {
        await half();
        // Reflect.apply, not method.apply: an RPC stub would take "apply" for a remote method.
        const result: unknown = await Reflect.apply(method as (...a: unknown[]) => Promise<unknown>, target, args);
        await half();
        return result;
      };
    },
  });
}
