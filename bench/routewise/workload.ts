/**
 * The requests every row sends: seeded, so each row gets the same ones byte for byte.
 * One-turn chats of varied length (a short system prompt, a 200-1,800 character
 * question) asking for 16-64 output tokens, which the fake providers always produce.
 */
import { prng, words, type ChatRequest } from "../quality/workloads";

export const SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly.";

export interface RequestSize {
  minChars: number;
  maxChars: number;
  minTokens: number;
  maxTokens: number;
}

export const DEFAULT_SIZE: RequestSize = { minChars: 200, maxChars: 1800, minTokens: 16, maxTokens: 64 };

export function makeRequests(seed: number, count: number, size: RequestSize = DEFAULT_SIZE): ChatRequest[] {
  const random = prng(seed * 7919 + 4); // its own stream: not the quality bench's for the same seed
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  return Array.from({ length: count }, (_, i) => {
    const chars = between(size.minChars, size.maxChars);
    const maxTokens = between(size.minTokens, size.maxTokens);
    return {
      messages: [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: `Request ${i}: ${words(random, chars)}?` },
      ],
      maxTokens,
    };
  });
}
