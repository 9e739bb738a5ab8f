import type { Env } from "../env";
import type { PoolSnapshot, ShardSnapshot } from "./types";
import { poolObjectName } from "../../durable-objects/affinity-shard";
import { AFFINITY_SHARDS, shardObjectName } from "./affinity-key";

/** Every pool object's state, null where an object could not be reached (shown, not fatal). */
export async function poolSnapshots(env: Env, pools: readonly string[]): Promise<Map<string, PoolSnapshot | null>> {
  const entries = await Promise.all(
    pools.map(async (pool) => [pool, await env.POOL_STATE.getByName(poolObjectName(pool)).snapshot().catch(() => null)] as const),
  );
  return new Map(entries);
}

export async function shardSnapshots(env: Env): Promise<(ShardSnapshot | null)[]> {
  return Promise.all(
    Array.from({ length: AFFINITY_SHARDS }, (_, i) => env.AFFINITY.getByName(shardObjectName(i)).snapshot().catch(() => null)),
  );
}
