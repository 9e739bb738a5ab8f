export { PoolState } from "../durable-objects/pool-state";
export { AffinityShard } from "../durable-objects/affinity-shard";
export default {
  async fetch(): Promise<Response> { return new Response("hi"); },
} satisfies ExportedHandler;
