/**
 * Prefix-cache guesses travel between isolates through the pool's object: what one
 * isolate routed reaches every other with its next sync, never itself, and a batch sent
 * twice is logged once.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ConfigSource } from "../../src/platform/config-source";
import type { PoolBatch, PoolSpec, PoolSyncRequest } from "../../src/core/pool/wire";
import { publish } from "../support/router";
import { poolStub, statefulConfig } from "../support/state";

const batch = (seq: number, prefix: PoolBatch["prefix"]): PoolBatch => ({ seq, outcomes: [], requests: [], attempts: [], fallbacks: [], prefix });
const sync = (isolate: string, seq: number, spec: PoolSpec, prefixCursor: number, batches: PoolBatch[] = []): PoolSyncRequest => ({ isolate, seq, spec, inflight: {}, batches, prefixCursor });

describe("prefix inserts between isolates", () => {
  it("reach the other isolates past their cursor, never the sender, once per batch", async () => {
    const config = statefulConfig({ replicas: [{ id: "a", url: "http://127.0.0.1:9" }, { id: "b", url: "http://127.0.0.1:9" }] });
    await publish(config.yaml);
    const spec = (await new ConfigSource().get(env)).current!.poolSpecs.get(config.pool)!;
    const stub = poolStub(config.pool);

    const x1 = await stub.sync(sync("x", 2, spec, 0, [batch(1, [{ replica: "a", hashes: [11, 12] }])]));
    expect(x1.prefix).toEqual({ cursor: 1, inserts: [] }); // its own insert is not sent back
    await stub.sync(sync("x", 3, spec, 1, [batch(1, [{ replica: "a", hashes: [11, 12] }])])); // resent: applied once
    const y1 = await stub.sync(sync("y", 1, spec, 0));
    expect(y1.prefix).toEqual({ cursor: 1, inserts: [{ replica: "a", hashes: [11, 12] }] });

    await stub.sync(sync("y", 3, spec, y1.prefix.cursor, [batch(2, [{ replica: "b", hashes: [21] }])]));
    const y2 = await stub.sync(sync("y", 4, spec, y1.prefix.cursor));
    expect(y2.prefix.inserts).toEqual([]); // nothing new from others
    const x2 = await stub.sync(sync("x", 4, spec, x1.prefix.cursor));
    expect(x2.prefix).toEqual({ cursor: 2, inserts: [{ replica: "b", hashes: [21] }] });
  });
});
