import { describe, expect, it } from "vitest";
import demo from "../../examples/demo.yaml?raw";
import seed from "../../examples/seed004-routing.yaml?raw";
import { loadConfig } from "../../src/core/config/load";
import { describeConfig } from "../../src/core/targets/describe";
import { buildRouteTable } from "../../src/core/targets/route-table";

describe("shipped examples", () => {
  it("demo.yaml splits demo-chat 60/40 local/remote", () => {
    const result = loadConfig(demo, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    const chat = buildRouteTable(result.config).get("demo-chat")!;
    const local = chat.replicas.filter((r) => r.labels.includes("local")).reduce((s, r) => s + r.share, 0);
    expect(local).toBeCloseTo(0.6, 10);
  });

  it("seed004-routing.yaml loads with or without its optional remote key", () => {
    const keyless = loadConfig(seed, {});
    const keyed = loadConfig(seed, { REMOTE_API_KEY: "sk-1" });
    if (!keyless.ok || !keyed.ok) throw new Error("seed example must load");
    expect(keyless.config.pools["llama-3-8b"]!.replicas[1]!.api_key).toBeUndefined();
    expect(keyed.config.pools["llama-3-8b"]!.replicas[1]!.api_key).toBe("sk-1");
  });
});

describe("config version ids", () => {
  it("sort by publish time, to the millisecond, whatever the content", async () => {
    const { configVersionId } = await import("../../src/core/config/kv-keys");
    const earlier = await configVersionId("zzz", new Date("2026-11-22T13:15:00.123Z"));
    const later = await configVersionId("aaa", new Date("2026-11-22T13:15:00.124Z"));
    expect(earlier).toMatch(/^20261122T131500123Z-[0-9a-f]{12}$/);
    expect(earlier < later).toBe(true);
  });
});

describe("graph examples", () => {
  it("KServe's samples load unchanged, as InferenceGraph documents", async () => {
    const { default: text } = await import("../../examples/graphs/kserve-samples.yaml?raw");
    const result = loadConfig(text, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(Object.keys(result.config.graphs).sort()).toEqual(["ensemble-model", "model-chainer", "model-switch", "splitter-model"]);
  });

  it("the router example loads and describes its graph", async () => {
    const { default: text } = await import("../../examples/graphs/router-bandit.yaml?raw");
    const result = loadConfig(text, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(describeConfig(result.config)).toContain("graph recommender at /graphs/recommender (models: recommender)");
    expect(describeConfig(result.config)).toContain("root: Router (epsilon_greedy), 3 steps");
  });
});

describe("demo graph", () => {
  it("demo.yaml's ensemble targets both local replicas and is reachable as a model", () => {
    const result = loadConfig(demo, {});
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.config.models["demo-ensemble"]).toEqual({ graph: "demo-ensemble" });
    expect(result.config.graphs["demo-ensemble"]!.nodes.root!.steps.map((s) => s.serviceUrl)).toEqual([
      "http://127.0.0.1:9101/v1/chat/completions",
      "http://127.0.0.1:9102/v1/chat/completions",
    ]);
  });
});
