/**
 * The fake replica's token model: no tokenizer, deterministic, cheap.
 *
 * - The canonical prompt is the completion's `prompt`, or the chat `messages` rendered
 *   in a ChatML template (below), ending with the assistant's generation prompt. A
 *   conversation's next turn therefore starts with the whole previous prompt, as with
 *   real chat templates, and hits the prefix cache.
 * - Every 4 bytes of its UTF-8 form are one token, rounding up, as llm-d's tokenizer-free
 *   `estimate` backend counts (tokenizer/estimate.go, bytesPerToken = 4).
 * - Block i holds tokens [i*B, (i+1)*B), i.e. bytes [4iB, 4(i+1)B). Only full blocks get
 *   a key. Key i hashes key i-1 with the block's bytes, so a block matches only when
 *   every block before it matches too: a changed early byte breaks the whole chain after
 *   it. The chain's root hashes the adapter name and the request's cache_salt, as vLLM
 *   puts both in its block hashes' extra keys, so the base model and each adapter keep
 *   separate prefixes.
 */
import { createHash } from "node:crypto";

export const BYTES_PER_TOKEN = 4; // llm-d's estimate backend
const KEY_HEX_CHARS = 32; // 128 bits of sha256: collisions are not a concern at test scale

export interface PromptTokens {
  tokens: number;
  /** Chained keys of the full blocks, in order. */
  blockKeys: string[];
  /** FNV-1a of the prompt bytes: seeds the generated text. */
  fingerprint: number;
}

export function tokenize(prompt: string, blockSize: number, chainRoot: { lora: string | null; cacheSalt: string | null }): PromptTokens {
  const bytes = Buffer.from(prompt, "utf8");
  const tokens = Math.ceil(bytes.length / BYTES_PER_TOKEN);
  const blockBytes = blockSize * BYTES_PER_TOKEN;
  const fullBlocks = Math.floor(tokens / blockSize);
  const blockKeys: string[] = [];
  let key = digest(["root", chainRoot.lora ?? "", chainRoot.cacheSalt ?? ""].join("\u0000"));
  for (let i = 0; i < fullBlocks; i++) {
    key = createHash("sha256").update(key).update(bytes.subarray(i * blockBytes, (i + 1) * blockBytes)).digest("hex").slice(0, KEY_HEX_CHARS);
    blockKeys.push(key);
  }
  return { tokens, blockKeys, fingerprint: fnv1a(bytes) };
}

/** How a chat request's messages become the prompt (a ChatML template, as Qwen's and others'). */
export function renderChat(messages: { role: string; content: string }[]): string {
  return messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("") + "<|im_start|>assistant\n";
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, KEY_HEX_CHARS);
}

function fnv1a(bytes: Uint8Array): number {
  let h = 2166136261;
  for (const b of bytes) h = Math.imul(h ^ b, 16777619);
  return h >>> 0;
}
