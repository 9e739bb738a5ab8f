import { adapterOf } from "../../src/core/picking/prefix/adapter";
import { describe, expect, it } from "vitest";
import { requestFeatures } from "../../src/core/picking/prefix/features";

const CHAT = "/v1/chat/completions";
const B = 64;
const blocksOf = (tag: string, blocks: number) => Array.from({ length: blocks }, (_, i) => `${tag}-${i}-`.padEnd(B, ".")).join("");

describe("requestFeatures", () => {
  const adapters = new Map([["sql-helper", { base: "llama-3-8b", adapter: "sql-lora" }]]);
  const long = { messages: [{ role: "system", content: blocksOf("sys", 4) }, { role: "user", content: "go" }] };

  it("seeds with base model and adapter: a LoRA request shares no block with its base model", () => {
    const base = requestFeatures({ apiPath: CHAT, body: long, target: adapterOf("llama-3-8b", adapters) });
    const lora = requestFeatures({ apiPath: CHAT, body: long, target: adapterOf("sql-helper", adapters) });
    expect(base.adapter).toBeNull();
    expect(lora.adapter).toBe("sql-lora");
    expect(base.hashes.length).toBe(4);
    expect(lora.hashes.some((h) => base.hashes.includes(h))).toBe(false);
  });

  it("seeds with vLLM's cache_salt and passes the location through", () => {
    const plain = requestFeatures({ apiPath: CHAT, body: long, target: adapterOf("llama-3-8b", adapters), locality: { colo: "AMS" } });
    const salted = requestFeatures({ apiPath: CHAT, body: { ...long, cache_salt: "tenant-a" }, target: adapterOf("llama-3-8b", adapters) });
    expect(salted.hashes.some((h) => plain.hashes.includes(h))).toBe(false);
    expect(plain.locality).toEqual({ colo: "AMS" });
    expect(salted.locality).toEqual({});
  });
});
