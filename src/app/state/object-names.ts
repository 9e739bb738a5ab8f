import { joinNameParts } from "../../lib/name-parts";

/** Durable Object names: one pool object per pool, pins sharded by key hash, one object per bandit router node. */
export const poolObjectName = (pool: string): string => `pool:${pool}`;
export const shardObjectName = (shard: number): string => `affinity:${shard}`;
export const envelopeObjectName = (model: string): string => `routewise:${model}`;
export const quotaObjectName = (id: string): string => `quota:${id}`;
export const slotsObjectName = (id: string): string => `slots:${id}`;
export const limitsObjectName = (bucket: string): string => `limits:${bucket}`;
export const graphCountersObjectName = (graph: string): string => `graph:${graph}`;
export const banditObjectName = (graph: string, node: string): string => `bandit:${joinNameParts(graph, node)}`;
