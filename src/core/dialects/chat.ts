/**
 * The chat-completions shapes the dialect translators speak to and read from: the
 * model-call layer sends every translated request as a chat completion, so this is the
 * one dialect every upstream is asked in. Only the fields the translators use are typed.
 */
import { isTokenCount } from "../routewise/bounds";

export type ChatContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string; detail?: string } };

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ChatContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/** A streamed piece of a tool call: `index` names the call; id and name come with its first piece. */
export interface ChatToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

export interface ChatChunk {
  id?: string;
  choices?: {
    index?: number;
    /** `refusal`: OpenAI's words for declining, instead of content. */
    delta?: { content?: string | null; refusal?: string | null; tool_calls?: ChatToolCallDelta[] | null };
    finish_reason?: string | null;
    /** vLLM and SGLang: the stop string that ended the answer (or a token id). */
    stop_reason?: unknown;
  }[];
  usage?: ChatUsage | null;
}

export interface ChatCompletion {
  id?: string;
  choices?: {
    message?: { content?: string | null; refusal?: string | null; tool_calls?: ChatToolCall[] | null };
    finish_reason?: string | null;
    stop_reason?: unknown;
  }[];
  usage?: ChatUsage | null;
}

/** A translation the client asked for that cannot be made: a 400 naming the field at fault. */
export interface Refusal {
  ok: false;
  message: string;
  /** Where in the request, e.g. `messages.2.content.0.type`. */
  param?: string;
}

export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * One token count an upstream reported, as a whole number from 0 to
 * MAX_TOKENS_PER_REQUEST; 0 for anything else. The meters set such a count aside; the
 * client's translated answer must not pass it on either (a 1e308 summed is Infinity,
 * which JSON writes as null).
 */
export const tokenCount = (v: unknown): number => (isTokenCount(v) ? v : 0);

/** Counts a chat answer reports, as bounded non-negative integers (cached within prompt); null when it reported none. */
export function usageCounts(usage: ChatUsage | null | undefined): { prompt: number; output: number; cached: number; reasoning: number } | null {
  if (!isRecord(usage)) return null;
  const n = tokenCount;
  const cached = n(isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details.cached_tokens : 0);
  const prompt = n(usage.prompt_tokens);
  const output = n(usage.completion_tokens);
  // Reasoning tokens are part of the output (OpenAI counts them in completion_tokens).
  const reasoning = n(isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details.reasoning_tokens : 0);
  return { prompt, output, cached: Math.min(cached, prompt), reasoning: Math.min(reasoning, output) };
}

/**
 * The characters of a chat answer's output: its text and its tool calls' arguments, as a
 * stream's translators count them, for an output estimate when the upstream reports no usage.
 */
export function outputChars(message: Record<string, unknown>): number {
  let chars = typeof message.content === "string" ? message.content.length : 0;
  if (typeof message.refusal === "string") chars += message.refusal.length;
  if (Array.isArray(message.tool_calls)) for (const call of message.tool_calls) if (isRecord(call) && isRecord(call.function) && typeof call.function.arguments === "string") chars += call.function.arguments.length;
  return chars;
}
