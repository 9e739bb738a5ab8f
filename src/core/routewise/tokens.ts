import { MAX_OUTPUT_TOKENS_ASKED } from "./bounds";

const CHARS_PER_TOKEN = 4; // the usual rule of thumb for English text in BPE tokenizers

/** Tokens a text of `chars` characters is estimated to hold, before a provider counts them. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

export type AskedOutput = { ok: true; tokens: number | null } | { ok: false; param: "max_tokens" | "max_completion_tokens"; message: string };

/**
 * The output tokens an OpenAI request asks for at most: `max_completion_tokens`, else
 * `max_tokens`; null when it sets neither (or sets them null). Each one set must be a
 * whole number from 1 to MAX_OUTPUT_TOKENS_ASKED: anything else is the client's error,
 * named by its field, never a number the router computes with.
 */
export function askedOutputTokens(body: Record<string, unknown>): AskedOutput {
  for (const param of ["max_completion_tokens", "max_tokens"] as const) {
    const v = body[param];
    if (v === undefined || v === null) continue;
    if (!(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_OUTPUT_TOKENS_ASKED)) {
      return { ok: false, param, message: `'${param}' must be a whole number from 1 to ${MAX_OUTPUT_TOKENS_ASKED}` };
    }
  }
  const asked = body.max_completion_tokens ?? body.max_tokens;
  return { ok: true, tokens: typeof asked === "number" ? asked : null };
}
