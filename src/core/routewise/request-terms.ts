import { estimatePromptTokens } from "./tokens";

/**
 * What a RouteWise request commits the operator's account to, read before it is sent:
 * the prompt it sends and how many answers it asks for are priced; what the router cannot
 * price is refused, so a client can never make a request look cheaper than the bill it
 * runs up. Refusals are the client's 400, naming the field.
 *
 *   n, best_of         priced: the output is predicted and reserved n (or best_of) times
 *   service_tier       auto or default only: another tier has another price the config does not state
 *   audio in or out    refused: billed by duration, which the router cannot read from the body
 *   file parts         refused: billed by pages and extracted content the router cannot see
 *   web_search_options refused: billed per search call, at no per-token price
 *   images             priced at IMAGE_PART_TOKENS each (./tokens.ts)
 */
export const MAX_CHOICES = 128; // OpenAI's bound on `n`

export type RequestTerms =
  | { ok: true; promptTokens: number; choices: number }
  | { ok: false; code: "invalid_n" | "unsupported_service_tier" | "unpriced_content"; param: string; message: string };

const PRICED_TIERS = new Set(["auto", "default"]);
const UNPRICED_PARTS = new Set(["input_audio", "file"]);

export function requestTerms(body: Record<string, unknown>): RequestTerms {
  let choices = 1;
  for (const field of ["n", "best_of"] as const) {
    const v = body[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_CHOICES) {
      return { ok: false, code: "invalid_n", param: field, message: `'${field}' must be an integer from 1 to ${MAX_CHOICES}` };
    }
    choices = Math.max(choices, v);
  }
  const tier = body.service_tier;
  if (tier !== undefined && tier !== null && !(typeof tier === "string" && PRICED_TIERS.has(tier))) {
    return { ok: false, code: "unsupported_service_tier", param: "service_tier", message: "'service_tier' must be 'auto' or 'default' here: this model's prices are the default tier's" };
  }
  const unpriced = (param: string, what: string) => ({ ok: false as const, code: "unpriced_content" as const, param, message: `${what} cannot be priced by this router, so it is not sent on the operator's account` });
  const modalities = body.modalities;
  if (modalities !== undefined && modalities !== null && !(Array.isArray(modalities) && modalities.every((m) => m === "text"))) return unpriced("modalities", "Output other than text");
  if (body.audio !== undefined && body.audio !== null) return unpriced("audio", "Audio output");
  if (body.web_search_options !== undefined && body.web_search_options !== null) return unpriced("web_search_options", "Web search");
  if (Array.isArray(body.messages)) {
    for (const message of body.messages) {
      const content = (message as { content?: unknown } | null)?.content;
      if (!Array.isArray(content)) continue;
      for (const part of content) {
        const type = (part as { type?: unknown } | null)?.type;
        if (typeof type === "string" && UNPRICED_PARTS.has(type)) return unpriced("messages", type === "file" ? "A file part" : "Audio input");
      }
    }
  }
  return { ok: true, promptTokens: estimatePromptTokens(body), choices };
}

/**
 * The body sent to a route: the route's model name, and on a stream usage asked for
 * (`stream_options.include_usage`), so spend is the provider's count rather than an
 * estimate. `hideUsageChunk` is true when the client did not ask for usage itself: its
 * stream is passed on without the usage the router asked for.
 */
export function meteredRequest(body: Record<string, unknown>, model: string): { body: Record<string, unknown>; hideUsageChunk: boolean } {
  if (body.stream !== true) return { body: { ...body, model }, hideUsageChunk: false };
  return { body: { ...withUsageAsked(body), model }, hideUsageChunk: hidesUsageChunk(body) };
}

/** A stream's body with `stream_options.include_usage: true`, its other stream options kept. */
export function withUsageAsked(body: Record<string, unknown>): Record<string, unknown> {
  const options = body.stream_options;
  const kept = typeof options === "object" && options !== null && !Array.isArray(options) ? options : {};
  return { ...body, stream_options: { ...kept, include_usage: true } };
}

/** Whether the router asks a stream for usage the client did not ask for, and so keeps that chunk from the client. */
export function hidesUsageChunk(body: Record<string, unknown>): boolean {
  if (body.stream !== true) return false;
  const options = body.stream_options;
  return !(typeof options === "object" && options !== null && (options as { include_usage?: unknown }).include_usage === true);
}
