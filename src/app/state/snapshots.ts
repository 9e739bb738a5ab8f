import type { StateBindings as Env } from "./bindings";
import { AFFINITY_SHARDS } from "./affinity-key";
import { poolRpc, shardRpc } from "./stubs";
import type { ShardSnapshot } from "../../core/affinity/wire";
import type { PoolSnapshot } from "../../core/pool/wire";

/** Every pool object's state, null where an object could not be reached (shown, not fatal). */
export async function poolSnapshots(env: Env, pools: readonly string[]): Promise<Map<string, PoolSnapshot | null>> {
  const entries = await Promise.all(pools.map(async (pool) => [pool, await poolRpc(env, pool).snapshot().catch(() => null)] as const));
  return new Map(entries);
}

export async function shardSnapshots(env: Env): Promise<(ShardSnapshot | null)[]> {
  return Promise.all(Array.from({ length: AFFINITY_SHARDS }, (_, i) => shardRpc(env, i).snapshot().catch(() => null)));
}
