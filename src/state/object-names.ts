/** Durable Object names: one pool object per pool, pins sharded by key hash. */
export const poolObjectName = (pool: string): string => `pool:${pool}`;
export const shardObjectName = (shard: number): string => `affinity:${shard}`;
export const envelopeObjectName = (model: string): string => `routewise:${model}`;
export const quotaObjectName = (id: string): string => `quota:${id}`;
export const slotsObjectName = (id: string): string => `slots:${id}`;
