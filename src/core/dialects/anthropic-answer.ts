/**
 * A chat completion as an Anthropic Message: the first choice's text as one text block,
 * its tool calls as tool_use blocks (arguments parsed; text that is not a JSON object
 * becomes `{}`), its finish reason as the stop reason, its usage as Anthropic counts it
 * (input without the cached tokens, which are `cache_read_input_tokens`).
 */
import type { ChatCompletion, ChatUsage } from "./chat";
import { estimateTokens } from "../routewise/tokens";
import { isRecord, outputChars, usageCounts } from "./chat";

export type AnthropicStopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal";

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
}

export type AnthropicBlock = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export interface AnthropicMessage {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: AnthropicBlock[];
  stop_reason: AnthropicStopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
}

/** What the caller knows that the answer does not say. */
export interface AnthropicFrame {
  /** The message id (`msg_…`). */
  id: string;
  /** The model as the client named it. */
  model: string;
  stopSequences: readonly string[];
}

/**
 * Why the answer stopped. Chat's `stop` is Anthropic's `end_turn`, or `stop_sequence` when
 * the upstream names (vLLM's and SGLang's `stop_reason`) which of the request's stop
 * sequences it met; other reasons the router cannot tell apart end the turn.
 */
export function stopReason(finish: string | null | undefined, matched: unknown, stopSequences: readonly string[]): { reason: AnthropicStopReason; sequence: string | null } {
  switch (finish) {
    case "length":
      return { reason: "max_tokens", sequence: null };
    case "tool_calls":
    case "function_call":
      return { reason: "tool_use", sequence: null };
    case "content_filter":
      return { reason: "refusal", sequence: null };
    default:
      if (typeof matched === "string" && stopSequences.includes(matched)) return { reason: "stop_sequence", sequence: matched };
      return { reason: "end_turn", sequence: null };
  }
}

export function anthropicUsage(usage: ChatUsage | null | undefined, estimatedOutput: number): AnthropicUsage {
  const counts = usageCounts(usage);
  if (counts === null) return { input_tokens: 0, output_tokens: estimatedOutput };
  return { input_tokens: counts.prompt - counts.cached, output_tokens: counts.output, ...(counts.cached > 0 && { cache_read_input_tokens: counts.cached }) };
}

/** A tool call's arguments as the object Anthropic's `input` is. */
export function toolInput(args: string): Record<string, unknown> {
  if (args.trim() === "") return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

export function chatToAnthropic(completion: ChatCompletion, frame: AnthropicFrame): AnthropicMessage {
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message = isRecord(choice?.message) ? choice!.message : {};
  const content: AnthropicBlock[] = [];
  const said = typeof message.content === "string" ? message.content : "";
  if (said !== "") content.push({ type: "text", text: said });
  // OpenAI's refusal: its words as text (the client has nothing else to show), and the stop says why.
  const refused = typeof message.refusal === "string" && message.refusal !== "" ? message.refusal : null;
  if (refused !== null) content.push({ type: "text", text: refused });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  calls.forEach((call, i) => {
    if (!isRecord(call) || !isRecord(call.function)) return;
    const fn = call.function;
    content.push({
      type: "tool_use",
      id: typeof call.id === "string" && call.id !== "" ? call.id : `toolu_${frame.id}_${i}`,
      name: typeof fn.name === "string" ? fn.name : "",
      input: toolInput(typeof fn.arguments === "string" ? fn.arguments : ""),
    });
  });
  const finish = typeof choice?.finish_reason === "string" ? choice.finish_reason : null;
  // A tool call is a tool_use stop whatever the upstream called its finish (some say "stop").
  const stop = calls.length > 0 && finish !== "length" ? { reason: "tool_use" as const, sequence: null } : refused !== null ? { reason: "refusal" as const, sequence: null } : stopReason(finish, choice?.stop_reason, frame.stopSequences);
  return {
    id: frame.id,
    type: "message",
    role: "assistant",
    model: frame.model,
    content,
    stop_reason: stop.reason,
    stop_sequence: stop.sequence,
    usage: anthropicUsage(completion.usage, estimateTokens(outputChars(message))),
  };
}
