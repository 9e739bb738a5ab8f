/**
 * The OpenAI surface of the fake replica: what a request asks for, and the bodies and
 * SSE chunks vLLM answers with (vllm/entrypoints/openai/protocol.py shapes, trimmed to
 * the fields clients read).
 */
import type { VllmConfig } from "./options";
import { renderChat } from "./tokens";

export type Kind = "chat" | "completion";

export interface Ask {
  kind: Kind;
  /** As the request named it: the base model or an adapter. */
  model: string;
  lora: string | null;
  prompt: string;
  stream: boolean;
  includeUsage: boolean;
  outputTokens: number;
  /** Whether outputTokens is what max_tokens asked for (finish_reason "length"). */
  hitsMaxTokens: boolean;
  cacheSalt: string | null;
}

export interface Refusal {
  status: number;
  body: { error: { message: string; type: string; param: string | null; code: number } };
}

export function refusal(status: number, message: string, param: string | null = null): Refusal {
  const type = status === 404 ? "NotFoundError" : "BadRequestError";
  return { status, body: { error: { message, type, param, code: status } } };
}

type Json = Record<string, unknown>;

export function parseAsk(kind: Kind, body: Json, c: VllmConfig): Ask | Refusal {
  const model = body.model;
  if (typeof model !== "string") return refusal(400, "model must be a string", "model");
  if (model !== c.model && !c.loras.includes(model)) return refusal(404, `The model \`${model}\` does not exist.`, "model");
  if (body.n !== undefined && body.n !== 1) return refusal(400, "the fake replica produces one choice (n = 1)", "n");

  let prompt: string;
  if (kind === "chat") {
    const messages = parseMessages(body.messages);
    if (typeof messages === "string") return refusal(400, messages, "messages");
    prompt = renderChat(messages);
  } else {
    const p = Array.isArray(body.prompt) && body.prompt.length === 1 ? body.prompt[0] : body.prompt;
    if (typeof p !== "string" || p === "") return refusal(400, "prompt must be a non-empty string (the fake takes one text prompt)", "prompt");
    prompt = p;
  }

  const maxKey = kind === "chat" && body.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
  const asked = body[maxKey];
  if (asked !== undefined && asked !== null && (!Number.isInteger(asked) || (asked as number) < 1)) {
    return refusal(400, `${maxKey} must be an integer >= 1`, maxKey);
  }
  const limit = typeof asked === "number" ? asked : undefined;
  const outputTokens = Math.min(limit ?? c.defaultOutputTokens, c.maxOutputTokens);
  const streamOptions = body.stream_options as Json | undefined;
  return {
    kind,
    model,
    lora: model === c.model ? null : model,
    prompt,
    stream: body.stream === true,
    includeUsage: streamOptions?.include_usage === true,
    outputTokens,
    hitsMaxTokens: limit !== undefined && outputTokens === limit,
    cacheSalt: typeof body.cache_salt === "string" ? body.cache_salt : null,
  };
}

/** Chat messages with their content flattened to text (text parts joined, others dropped). */
function parseMessages(value: unknown): { role: string; content: string }[] | string {
  if (!Array.isArray(value) || value.length === 0) return "messages must be a non-empty array";
  const out: { role: string; content: string }[] = [];
  for (const m of value as unknown[]) {
    if (typeof m !== "object" || m === null || typeof (m as Json).role !== "string") return "each message needs a string role";
    const content = (m as Json).content;
    let text = "";
    if (typeof content === "string") text = content;
    else if (Array.isArray(content)) {
      for (const part of content as Json[]) if (part?.type === "text" && typeof part.text === "string") text += part.text;
    } else if (content !== null && content !== undefined) return "message content must be a string, a list of parts or null";
    out.push({ role: (m as Json).role as string, content: text });
  }
  return out;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** As vLLM answers with --enable-prompt-tokens-details; the fake always does. */
  prompt_tokens_details: { cached_tokens: number };
}

export function usage(promptTokens: number, completionTokens: number, cachedTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
  };
}

/** Fields every body and chunk of one answer share. */
export function envelope(ask: Ask, requestId: string): Json {
  const prefix = ask.kind === "chat" ? "chatcmpl" : "cmpl";
  return { id: `${prefix}-${requestId}`, created: Math.floor(Date.now() / 1000), model: ask.model };
}

export function finalBody(ask: Ask, base: Json, text: string, finish: string, u: Usage): Json {
  if (ask.kind === "chat") {
    return {
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: text, tool_calls: [] }, logprobs: null, finish_reason: finish, stop_reason: null }],
      usage: u,
      prompt_logprobs: null,
    };
  }
  return { ...base, object: "text_completion", choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null, prompt_logprobs: null }], usage: u };
}

/** vLLM's first chat chunk: the role, no text yet (sent with the first token). */
export function roleChunk(base: Json): Json {
  return { ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }] };
}

/** One streamed chunk of text; `finish` closes the choice on the last one. */
export function textChunk(ask: Ask, base: Json, text: string, finish: string | null): Json {
  if (ask.kind === "chat") {
    return { ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: finish }] };
  }
  return { ...base, object: "text_completion", choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }] };
}

/** stream_options.include_usage: a last chunk with no choices and the usage. */
export function usageChunk(ask: Ask, base: Json, u: Usage): Json {
  return { ...base, object: ask.kind === "chat" ? "chat.completion.chunk" : "text_completion", choices: [], usage: u };
}

export function modelList(c: VllmConfig): Json {
  const card = (id: string, root: string, parent: string | null) => ({
    id,
    object: "model",
    created: Math.floor(Date.now() / 1000),
    owned_by: "vllm",
    root,
    parent,
    max_model_len: c.numGpuBlocks * c.blockSize,
  });
  return { object: "list", data: [card(c.model, c.model, null), ...c.loras.map((l) => card(l, `/fake/loras/${l}`, c.model))] };
}
