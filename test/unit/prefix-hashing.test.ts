import { describe, expect, it } from "vitest";
import { adapterOf } from "../../src/core/picking/prefix/adapter";
import { blockHashes, DEFAULT_BLOCK_CHARS, DEFAULT_MAX_BLOCKS, hashSeed } from "../../src/core/picking/prefix/block-hashes";
import { hash53 } from "../../src/lib/hash53";
import { promptText } from "../../src/core/picking/prefix/prompt-text";

const CHAT = "/v1/chat/completions";
const B = 64;
/** Text of exactly `blocks` blocks of B characters, distinct per `tag`. */
const blocksOf = (tag: string, blocks: number) => Array.from({ length: blocks }, (_, i) => `${tag}-${i}-`.padEnd(B, ".")).join("");

describe("hash53", () => {
  it("gives integers in [0, 2^53) that survive JSON exactly", () => {
    for (const text of ["", "a", "ab", "abc", "héllo wörld 🚀", "x".repeat(1000)]) {
      const h = hash53(text);
      expect(Number.isSafeInteger(h)).toBe(true);
      expect(h).toBeGreaterThanOrEqual(0);
      expect(JSON.parse(JSON.stringify(h))).toBe(h);
    }
  });

  it("hashes a range as it hashes the substring, and the seed changes the result", () => {
    const text = "0123456789abcdef";
    expect(hash53(text, 3, 11)).toBe(hash53(text.slice(3, 11)));
    expect(hash53(text, 3, 11, 12345)).toBe(hash53(text.slice(3, 11), 0, 8, 12345));
    expect(hash53(text, 0, text.length, 1)).not.toBe(hash53(text));
    expect(hash53(text, 0, text.length, 2 ** 40)).not.toBe(hash53(text)); // the seed's high bits count too
  });

  it("tells the empty string from a NUL and odd lengths from padded even ones", () => {
    expect(new Set([hash53(""), hash53("\u0000"), hash53("\u0000\u0000"), hash53("a"), hash53("a\u0000")]).size).toBe(5);
  });

  it("has no collisions among 200,000 near-identical strings (expected: 200,000² / 2^54 ≈ 2e-6)", () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200_000; i++) seen.add(hash53(`block ${i} `.padEnd(B, "x")));
    expect(seen.size).toBe(200_000);
  });

  // Each of the 53 output bits should flip with probability 1/2 when one input character
  // changes: over 2,000 pairs the mean is 26.5 ± 0.08 (sd 3.64/√2000). [25.5, 27.5] fails a
  // correct hash with probability < 1e-30; a hash whose lane b never mixed (only 32 bits
  // live, mean 16) or that ignored the changed character (0) fails it.
  it("flips about half of its 53 bits when one character changes", () => {
    let flipped = 0;
    const pairs = 2_000;
    for (let i = 0; i < pairs; i++) {
      const text = `sample ${i} `.padEnd(B, "y");
      const pos = i % B;
      const changed = text.slice(0, pos) + String.fromCharCode(text.charCodeAt(pos) ^ 1) + text.slice(pos + 1);
      const a = hash53(text);
      const b = hash53(changed);
      flipped += popcount(Math.floor(a / 2 ** 32) ^ Math.floor(b / 2 ** 32)) + popcount((a >>> 0) ^ (b >>> 0));
    }
    const mean = flipped / pairs;
    expect(mean).toBeGreaterThan(25.5);
    expect(mean).toBeLessThan(27.5);
  });
});

function popcount(x: number): number {
  let n = 0;
  for (let v = x >>> 0; v !== 0; v >>>= 1) n += v & 1;
  return n;
}

describe("blockHashes", () => {
  const seed = hashSeed("llama-3-8b");

  it("uses GAIE's defaults: 64-character blocks (16 tokens × 4 characters), at most 256 blocks", () => {
    expect(DEFAULT_BLOCK_CHARS).toBe(64);
    expect(DEFAULT_MAX_BLOCKS).toBe(256);
    expect(blockHashes(seed, "z".repeat(64 * 300))).toHaveLength(256);
  });

  it("hashes full blocks only: a trailing partial block and a text under one block give nothing", () => {
    expect(blockHashes(seed, "a".repeat(B - 1), B, 256)).toEqual([]);
    expect(blockHashes(seed, "a".repeat(B), B, 256)).toHaveLength(1);
    expect(blockHashes(seed, blocksOf("p", 3) + "tail", B, 256)).toHaveLength(3);
    expect(blockHashes(seed, blocksOf("p", 3) + "tail", B, 256)).toEqual(blockHashes(seed, blocksOf("p", 3), B, 256));
  });

  it("stops at maxBlocks", () => {
    const all = blockHashes(seed, blocksOf("p", 10), B, 256);
    expect(blockHashes(seed, blocksOf("p", 10), B, 4)).toEqual(all.slice(0, 4));
    expect(blockHashes(seed, blocksOf("p", 10), B, 0)).toEqual([]);
  });

  it("gives the same leading hashes for the same prefix and different ones from the first differing block", () => {
    const shared = blocksOf("system", 3);
    const a = blockHashes(seed, shared + blocksOf("alice", 2), B, 256);
    const b = blockHashes(seed, shared + blocksOf("bob", 2), B, 256);
    expect(a.slice(0, 3)).toEqual(b.slice(0, 3));
    expect(a[3]).not.toBe(b[3]);
    expect(a[4]).not.toBe(b[4]);
  });

  it("chains: one character changed early changes every later hash, even where the blocks' own text is equal", () => {
    const text = blocksOf("doc", 8);
    const changed = text.slice(0, 10) + "#" + text.slice(11); // inside block 0
    const a = blockHashes(seed, text, B, 256);
    const b = blockHashes(seed, changed, B, 256);
    for (let i = 0; i < 8; i++) expect(b[i]).not.toBe(a[i]);
    // Unchained hashing would make block 5 equal: its own 64 characters did not change.
    expect(text.slice(5 * B, 6 * B)).toBe(changed.slice(5 * B, 6 * B));
  });

  it("a change in block 2 keeps blocks 0 and 1", () => {
    const text = blocksOf("doc", 5);
    const changed = text.slice(0, 2 * B + 7) + "#" + text.slice(2 * B + 8);
    const a = blockHashes(seed, text, B, 256);
    const b = blockHashes(seed, changed, B, 256);
    expect(b.slice(0, 2)).toEqual(a.slice(0, 2));
    for (let i = 2; i < 5; i++) expect(b[i]).not.toBe(a[i]);
  });

  it("never matches across models, adapters or cache salts", () => {
    const text = blocksOf("same", 6);
    const chains = [
      blockHashes(hashSeed("llama-3-8b"), text, B, 256),
      blockHashes(hashSeed("mistral-7b"), text, B, 256),
      blockHashes(hashSeed("llama-3-8b", "sql-lora"), text, B, 256),
      blockHashes(hashSeed("llama-3-8b", null, "tenant-a"), text, B, 256),
    ];
    const all = chains.flat();
    expect(new Set(all).size).toBe(all.length);
  });

  it("separates seed parts: (ab, c) is not (a, bc)", () => {
    expect(hashSeed("ab", "c")).not.toBe(hashSeed("a", "bc"));
    expect(hashSeed("m", null, null)).toBe(hashSeed("m"));
    expect(blockHashes(hashSeed("ab", "c"), blocksOf("t", 1), B, 256)).not.toEqual(blockHashes(hashSeed("a", "bc"), blocksOf("t", 1), B, 256));
  });

  it("refuses a block size that is not a positive integer", () => {
    expect(() => blockHashes(seed, "abc", 0, 256)).toThrow(RangeError);
    expect(() => blockHashes(seed, "abc", 1.5, 256)).toThrow(RangeError);
  });
});

describe("promptText", () => {
  const turn1 = [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Hi" },
  ];
  const turn2 = [...turn1, { role: "assistant", content: "Hello." }, { role: "user", content: "Weather?" }];

  it("renders roles: the same words as system and as user differ (Ray's content-only concatenation would not)", () => {
    const asSystem = promptText(CHAT, { messages: [{ role: "system", content: "X" }] });
    const asUser = promptText(CHAT, { messages: [{ role: "user", content: "X" }] });
    expect(asSystem).not.toBe(asUser);
    expect(asSystem).toContain("system");
    expect(asSystem).toContain("X");
  });

  it("keeps a conversation's earlier turns as a prefix of its later ones", () => {
    const a = promptText(CHAT, { messages: turn1 });
    const b = promptText(CHAT, { messages: turn2 });
    expect(a.length).toBeGreaterThan(0);
    expect(b.startsWith(a)).toBe(true);
  });

  it("counts every message, not just the first (sglang #26263 hashed only the system prompt)", () => {
    const a = promptText(CHAT, { messages: [turn1[0], { role: "user", content: "question A" }] });
    const b = promptText(CHAT, { messages: [turn1[0], { role: "user", content: "question B" }] });
    expect(a).not.toBe(b);
  });

  it("does not depend on the client's key order or extra fields", () => {
    const a = promptText(CHAT, { model: "m", messages: [{ role: "user", content: "hi", name: "bob" }] });
    const b = promptText(CHAT, { messages: [{ vendor_x: 1, name: "bob", content: "hi", role: "user" }], temperature: 0.2 });
    expect(a).toBe(b);
  });

  it("renders text parts as text, so a string and one text part agree", () => {
    const plain = promptText(CHAT, { messages: [{ role: "user", content: "describe this" }] });
    const parts = promptText(CHAT, { messages: [{ role: "user", content: [{ type: "text", text: "describe " }, { type: "text", text: "this" }] }] });
    expect(parts).toBe(plain);
  });

  it("puts a short stable placeholder for images: same image same text, different image different text", () => {
    const withImage = (url: string) => promptText(CHAT, { messages: [{ role: "user", content: [{ type: "text", text: "what is" }, { type: "image_url", image_url: { url } }] }] });
    const bigA = `data:image/png;base64,${"A".repeat(2_000_000)}`;
    const bigB = `data:image/png;base64,${"A".repeat(1_999_000)}${"B".repeat(1_000)}`;
    expect(withImage("https://example.com/cat.png")).toBe(withImage("https://example.com/cat.png"));
    expect(withImage("https://example.com/cat.png")).not.toBe(withImage("https://example.com/dog.png"));
    expect(withImage(bigA)).toBe(withImage(bigA));
    expect(withImage(bigA)).not.toBe(withImage(bigB));
    expect(withImage(bigA).length).toBeLessThan(100); // 2 MB of base64 does not fill the hashing window
  });

  it("renders tool definitions first and an assistant's tool calls by name and arguments", () => {
    const tools = [{ type: "function", function: { name: "get_weather", parameters: {} } }];
    const call = { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] };
    const text = promptText(CHAT, { tools, messages: [{ role: "user", content: "weather?" }, call, { role: "tool", tool_call_id: "call_1", content: "rain" }] });
    expect(text.indexOf("get_weather")).toBeLessThan(text.indexOf("weather?"));
    expect(text).toContain('{"city":"Oslo"}');
    expect(text).toContain("rain");
    expect(text).not.toContain("call_1");
    const otherTools = promptText(CHAT, { tools: [{ type: "function", function: { name: "search" } }], messages: [{ role: "user", content: "weather?" }] });
    // Different tools make a different prefix before the conversation starts.
    expect(otherTools.slice(0, otherTools.indexOf("weather?"))).not.toBe(text.slice(0, text.indexOf("weather?")));
  });

  it("takes a completion's prompt: a string, the first of a batch, token ids as a prefix-preserving list", () => {
    expect(promptText("/v1/completions", { prompt: "Once upon" })).toBe("Once upon");
    expect(promptText("/v1/completions", { prompt: ["first", "second"] })).toBe("first");
    expect(promptText("/v1/completions", { prompt: [1, 2, 3] })).toBe("1,2,3,");
    expect(promptText("/v1/completions", { prompt: [1, 2, 3, 4] }).startsWith(promptText("/v1/completions", { prompt: [1, 2, 3] }))).toBe(true);
    expect(promptText("/v1/completions", { prompt: [[7, 8], [9]] })).toBe("7,8,");
    expect(promptText("/v1/embeddings", { input: "embed me" })).toBe("embed me");
  });

  it("gives nothing for other paths, missing fields and non-objects", () => {
    expect(promptText("/v1/models", { messages: turn1 })).toBe("");
    expect(promptText(CHAT, { prompt: "not chat" })).toBe("");
    expect(promptText("/v1/completions", { prompt: 42 })).toBe("");
    expect(promptText(CHAT, null)).toBe("");
    expect(promptText(CHAT, [turn1])).toBe("");
  });

  it("stops at maxChars with exactly the leading characters", () => {
    const full = promptText(CHAT, { messages: turn2 });
    expect(promptText(CHAT, { messages: turn2 }, 10)).toBe(full.slice(0, 10));
  });
});

describe("adapterOf", () => {
  const adapters = new Map([["sql-helper", { base: "llama-3-8b", adapter: "sql-lora" }]]);

  it("maps a LoRA model name to its base and adapter, anything else to itself", () => {
    expect(adapterOf("sql-helper", adapters)).toEqual({ base: "llama-3-8b", adapter: "sql-lora" });
    expect(adapterOf("llama-3-8b", adapters)).toEqual({ base: "llama-3-8b", adapter: null });
  });
});
