/** The bench's limits row: the keyed row's config plus a limit of every kind, loaded by the router's own loader. */
import { describe, expect, it } from "vitest";
import { BENCH_LIMITS, keyedConfig } from "../../bench/workers";
import { loadConfig } from "../../src/core/config/load";
import { buildLimitTable } from "../../src/core/limits/rules";
import { DIMENSIONS } from "../../src/core/limits/wire";

const UPSTREAM = "http://127.0.0.1:9";

function load(text: string) {
  const result = loadConfig(text, {});
  if (!result.ok) throw new Error(result.errors.map((e) => `${e.path}: ${e.message}`).join("; "));
  return result.config;
}

describe("the limits row's config", () => {
  it("limits the keyed row's one key in every dimension, with the amounts the bench states", () => {
    const table = buildLimitTable(load(keyedConfig(UPSTREAM, true)));
    expect(table.scopes).toHaveLength(1);
    const [{ scope, limits }] = table.scopes as [(typeof table.scopes)[number]];
    expect(scope).toEqual({ key: "client_keys[0]", perTenant: false });
    expect(Object.keys(limits).sort()).toEqual([...DIMENSIONS].sort());
    expect(limits.requests?.total).toBe(BENCH_LIMITS.requestsPerMinute);
    expect(limits.tokens?.total).toBe(BENCH_LIMITS.tokensPerMinute);
    expect(limits.concurrent?.total).toBe(BENCH_LIMITS.concurrentRequests);
    expect(limits.spend?.total).toBe(BENCH_LIMITS.spend);
  });

  it("is the keyed row's config and nothing else when limits are off", () => {
    const keyed = load(keyedConfig(UPSTREAM));
    expect(keyed.limits).toEqual([]);
    const limited = load(keyedConfig(UPSTREAM, true));
    // Only prices and limits differ: same pools, routing and keys.
    expect({ ...limited, limits: [], models: keyed.models }).toEqual(keyed);
  });
});
