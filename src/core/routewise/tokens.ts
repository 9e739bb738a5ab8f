import { MAX_OUTPUT_TOKENS_ASKED } from "./bounds";

const CHARS_PER_TOKEN = 4; // the usual rule of thumb for English text in BPE tokenizers
/**
 * One image part, whatever its bytes: providers resize an image before they count it, so
 * its size on the wire says nothing. OpenAI's tiled high-detail pricing tops out at 1,445
 * tokens (8 tiles × 170 + 85) once an image is resized; a round bound above that.
 */
export const IMAGE_PART_TOKENS = 1_500;

/** Tokens a text of `chars` characters is estimated to hold, before a provider counts them. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * Prompt tokens a request body is estimated to hold, before a provider counts them: every
 * string anywhere in the body (messages and any part type, tools, schemas, a prediction…)
 * at CHARS_PER_TOKEN, each token id of a `prompt` / `input` given as ids as one token, and
 * each image part at IMAGE_PART_TOKENS instead of its URL or bytes. Only the model name is
 * left out (the router sets it per route). It errs long — keys like `role` and control
 * strings are counted — which errs dear, never cheap: a client cannot make a large body
 * look small by putting its text where a narrower reading would not look.
 */
export function estimatePromptTokens(body: Record<string, unknown>): number {
  const tally = { chars: 0, ids: 0, images: 0 };
  // for…in over a parsed body's own keys: no entries arrays built for every object of every limited request.
  for (const key in body) if (key !== "model" && Object.hasOwn(body, key)) walk(body[key], key, tally);
  return estimateTokens(tally.chars) + tally.ids + tally.images * IMAGE_PART_TOKENS;
}

type Tally = { chars: number; ids: number; images: number };

function walk(value: unknown, key: string, tally: Tally): void {
  if (typeof value === "string") {
    tally.chars += value.length;
    return;
  }
  if (Array.isArray(value)) {
    const ids = key === "prompt" || key === "input"; // completions / embeddings: token ids, or arrays of them
    for (const item of value) {
      if (ids && typeof item === "number") tally.ids++;
      else walk(item, key, tally);
    }
    return;
  }
  if (typeof value !== "object" || value === null) return;
  const record = value as Record<string, unknown>;
  const image = record.type === "image_url";
  if (image) tally.images++;
  for (const k in record) {
    if (!Object.hasOwn(record, k) || (image && k === "image_url")) continue; // the image is counted as an image, not as its URL's or data's characters
    walk(record[k], k, tally);
  }
}

export type AskedOutput = { ok: true; tokens: number | null } | { ok: false; param: "max_tokens" | "max_completion_tokens"; message: string };

/**
 * The output tokens an OpenAI request asks for at most: `max_completion_tokens`, else
 * `max_tokens`; null when it sets neither (or sets them null). Each one set must be a
 * whole number from 1 to MAX_OUTPUT_TOKENS_ASKED: anything else is the client's error,
 * named by its field, never a number the router computes with.
 */
const OUTPUT_PARAMS = ["max_completion_tokens", "max_tokens"] as const;

export function askedOutputTokens(body: Record<string, unknown>): AskedOutput {
  for (const param of OUTPUT_PARAMS) {
    const v = body[param];
    if (v === undefined || v === null) continue;
    if (!(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_OUTPUT_TOKENS_ASKED)) {
      return { ok: false, param, message: `'${param}' must be a whole number from 1 to ${MAX_OUTPUT_TOKENS_ASKED}` };
    }
  }
  const asked = body.max_completion_tokens ?? body.max_tokens;
  return { ok: true, tokens: typeof asked === "number" ? asked : null };
}
