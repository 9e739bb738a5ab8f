/**
 * A chat completion as an OpenAI Response object: the first choice's text as one message
 * item with one output_text part, each tool call as a function_call item, the finish
 * reason as the status (`length` is `incomplete` for max_output_tokens, `content_filter`
 * is `incomplete` for content_filter), the usage as Responses counts it (input includes
 * the cached tokens).
 */
import { estimateTokens } from "../routewise/tokens";
import type { ChatCompletion, ChatUsage } from "./chat";
import { isRecord, outputChars, usageCounts } from "./chat";
import type { ResponsesEcho } from "./responses-request";

export interface ResponsesFrame {
  /** `resp_…`; item ids are made from it. */
  id: string;
  model: string;
  /** Seconds since the epoch. */
  createdAt: number;
  echo: ResponsesEcho;
}

export type OutputItem =
  | { type: "message"; id: string; status: "in_progress" | "completed" | "incomplete"; role: "assistant"; content: Record<string, unknown>[] }
  | { type: "function_call"; id: string; call_id: string; name: string; arguments: string; status: "in_progress" | "completed" | "incomplete" };

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export const messageItemId = (frame: ResponsesFrame, n: number): string => `msg_${frame.id.replace(/^resp_/, "")}${n === 0 ? "" : `_${n}`}`;
export const callItemId = (frame: ResponsesFrame, n: number): string => `fc_${frame.id.replace(/^resp_/, "")}_${n}`;
export const outputTextPart = (text: string): Record<string, unknown> => ({ type: "output_text", text, annotations: [], logprobs: [] });

/** A model's refusal (chat's `message.refusal`), as the Responses API carries it: a content part of its own. */
export const refusalPart = (refusal: string): Record<string, unknown> => ({ type: "refusal", refusal });

/** A call's arguments as a client parses them: a call without any is `{}`, as the Responses API gives it (`JSON.parse("")` throws). */
export const callArguments = (args: unknown): string => (typeof args === "string" && args !== "" ? args : "{}");

/** How the answer ended, as a Response's status says it. */
export function responseStatus(finish: string | null | undefined): { status: ResponseStatus; incomplete: { reason: string } | null } {
  if (finish === "length") return { status: "incomplete", incomplete: { reason: "max_output_tokens" } };
  if (finish === "content_filter") return { status: "incomplete", incomplete: { reason: "content_filter" } };
  return { status: "completed", incomplete: null };
}

export function responsesUsage(usage: ChatUsage | null | undefined, estimatedOutput: number): Record<string, unknown> {
  const counts = usageCounts(usage) ?? { prompt: 0, output: estimatedOutput, cached: 0, reasoning: 0 };
  return {
    input_tokens: counts.prompt,
    input_tokens_details: { cached_tokens: counts.cached },
    output_tokens: counts.output,
    output_tokens_details: { reasoning_tokens: counts.reasoning },
    total_tokens: counts.prompt + counts.output,
  };
}

/** The Response object around its output, in any state (the stream's events carry it too). */
export function responseObject(
  frame: ResponsesFrame,
  status: ResponseStatus,
  output: OutputItem[],
  extra: { usage?: Record<string, unknown> | null; incomplete?: { reason: string } | null; error?: { code: string; message: string } | null } = {},
): Record<string, unknown> {
  const { echo } = frame;
  return {
    id: frame.id,
    object: "response",
    created_at: frame.createdAt,
    status,
    error: extra.error ?? null,
    incomplete_details: extra.incomplete ?? null,
    instructions: echo.instructions,
    max_output_tokens: echo.max_output_tokens,
    metadata: echo.metadata ?? {},
    model: frame.model,
    output,
    parallel_tool_calls: echo.parallel_tool_calls,
    previous_response_id: null,
    reasoning: { effort: echo.reasoningEffort, summary: null },
    store: false,
    temperature: echo.temperature,
    text: { format: echo.format },
    tool_choice: echo.tool_choice,
    tools: echo.tools,
    top_p: echo.top_p,
    truncation: "disabled",
    usage: extra.usage ?? null,
    ...(echo.user !== undefined && { user: echo.user }),
  };
}

export function chatToResponse(completion: ChatCompletion, frame: ResponsesFrame): Record<string, unknown> {
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message = isRecord(choice?.message) ? choice!.message : {};
  const output: OutputItem[] = [];
  const said = typeof message.content === "string" ? message.content : "";
  const { status, incomplete } = responseStatus(typeof choice?.finish_reason === "string" ? choice.finish_reason : null);
  const refused = typeof message.refusal === "string" ? message.refusal : "";
  const itemStatus = status === "incomplete" ? "incomplete" : "completed";
  if (said !== "" || refused !== "") {
    const content = [...(said !== "" ? [outputTextPart(said)] : []), ...(refused !== "" ? [refusalPart(refused)] : [])];
    output.push({ type: "message", id: messageItemId(frame, 0), status: itemStatus, role: "assistant", content });
  }
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  calls.forEach((call, i) => {
    if (!isRecord(call) || !isRecord(call.function)) return;
    const fn = call.function;
    const callId = typeof call.id === "string" && call.id !== "" ? call.id : `call_${frame.id}_${i}`;
    output.push({ type: "function_call", id: callItemId(frame, i), call_id: callId, name: typeof fn.name === "string" ? fn.name : "", arguments: callArguments(fn.arguments), status: itemStatus });
  });
  const response = responseObject(frame, status, output, { usage: responsesUsage(completion.usage, estimateTokens(outputChars(message))), incomplete });
  return { ...response, output_text: said };
}
