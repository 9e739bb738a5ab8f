/**
 * An Anthropic Messages request (`POST /v1/messages`) as the chat-completions request the
 * model-call layer sends, or the client's 400 naming the field it cannot take.
 *
 *   system (string or text blocks)   one system message, the blocks' texts joined by "\n\n"
 *   a `system` message in messages  its text added to that one system message, in order
 *                                    (Claude Code sends its environment so, between turns;
 *                                    many open models' chat templates take one system
 *                                    message, first, and a tool result must follow its call)
 *   user text / image blocks         content parts: text, image_url (base64 as a data: URL)
 *   user tool_result blocks          one `tool` message each, before the user's other parts;
 *                                    its text blocks joined; `is_error` prefixes "Error: "
 *   assistant text / tool_use        content and tool_calls (input as JSON text)
 *   assistant thinking blocks        dropped: chat completions cannot carry them back
 *   max_tokens (required)            max_tokens
 *   stop_sequences                   stop
 *   temperature, top_p, top_k        as is (top_k only when given: not every upstream knows it)
 *   tools                            function tools; server tools (with a versioned type) refused
 *   tool_choice auto/any/tool/none   auto/required/{function}/none; disable_parallel_tool_use
 *                                    as parallel_tool_calls: false
 *   metadata.user_id                 user (and the affinity user)
 *   stream                           stream, asking usage (stream_options.include_usage)
 * Other fields (cache_control, thinking, service_tier, …) are read past.
 */
import { MAX_OUTPUT_TOKENS_ASKED } from "../config/bounds";
import type { ChatContentPart, ChatMessage, ChatToolCall, Refusal } from "./chat";
import { argumentsText, BadField, blocks, blockTexts, list, optionalBoolean, optionalNumber, optionalText, optionalWhole, record, refusing, text } from "./fields";

export interface AnthropicAsChat {
  ok: true;
  /** The chat-completions body, `model` as the client named it. */
  chat: Record<string, unknown>;
  model: string;
  stream: boolean;
  /** `metadata.user_id`: whose session this is, for affinity. */
  userId: string | null;
  /** The request's stop sequences: an upstream's matched stop string is named back only when it is one of these. */
  stopSequences: string[];
}

const MAX_TOP_K = 1_000_000; // far above any vocabulary: a bound, not a policy

export function anthropicToChat(body: Record<string, unknown>): AnthropicAsChat | Refusal {
  return refusing(() => translate(body));
}

function translate(body: Record<string, unknown>): AnthropicAsChat {
  const model = body.model;
  if (typeof model !== "string" || model === "") throw new BadField("model", "is required and must be a non-empty string");
  if (body.max_tokens === undefined || body.max_tokens === null) throw new BadField("max_tokens", "is required");
  const maxTokens = optionalWhole(body.max_tokens, "max_tokens", 1, MAX_OUTPUT_TOKENS_ASKED)!;
  const stream = optionalBoolean(body.stream, "stream") ?? false;

  const messages: ChatMessage[] = [];
  const systemTexts: string[] = [];
  const system = systemText(body.system, "system");
  if (system !== null) systemTexts.push(system);
  const turns = list(body.messages, "messages");
  if (turns.length === 0) throw new BadField("messages", "must hold at least one message");
  let askedTools = new Set<string>(); // tool_use ids of the assistant turn just before
  turns.forEach((turn, i) => {
    const path = `messages.${i}`;
    const m = record(turn, path);
    if (m.role === "user") {
      messages.push(...userTurn(m.content, `${path}.content`, askedTools));
      askedTools = new Set();
    } else if (m.role === "assistant") {
      const { message, toolIds } = assistantTurn(m.content, `${path}.content`);
      messages.push(message);
      askedTools = toolIds;
    } else if (m.role === "system") {
      const said = systemText(m.content, `${path}.content`); // a tool_use still awaits its result across it
      if (said !== null) systemTexts.push(said);
    } else {
      throw new BadField(`${path}.role`, "must be 'user', 'assistant' or 'system'");
    }
  });

  if (messages.length === 0) throw new BadField("messages", "must hold at least one user or assistant message");
  if (systemTexts.length > 0) messages.unshift({ role: "system", content: systemTexts.join("\n\n") });
  const chat: Record<string, unknown> = { model, messages, max_tokens: maxTokens };
  const temperature = optionalNumber(body.temperature, "temperature", 0, 1);
  if (temperature !== undefined) chat.temperature = temperature;
  const topP = optionalNumber(body.top_p, "top_p", 0, 1);
  if (topP !== undefined) chat.top_p = topP;
  const topK = optionalWhole(body.top_k, "top_k", 1, MAX_TOP_K);
  if (topK !== undefined) chat.top_k = topK;
  const stopSequences = body.stop_sequences === undefined || body.stop_sequences === null ? [] : list(body.stop_sequences, "stop_sequences").map((s, i) => text(s, `stop_sequences.${i}`));
  if (stopSequences.length > 0) chat.stop = stopSequences;
  if (body.tools !== undefined && body.tools !== null) {
    const tools = list(body.tools, "tools").map((t, i) => tool(t, `tools.${i}`));
    if (tools.length > 0) chat.tools = tools;
  }
  if (body.tool_choice !== undefined && body.tool_choice !== null) Object.assign(chat, toolChoice(body.tool_choice));
  let userId: string | null = null;
  if (body.metadata !== undefined && body.metadata !== null) {
    userId = optionalText(record(body.metadata, "metadata").user_id, "metadata.user_id") ?? null;
    if (userId !== null) chat.user = userId;
  }
  if (stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return { ok: true, chat, model, stream, userId, stopSequences };
}

function systemText(system: unknown, path: string): string | null {
  if (system === undefined || system === null) return null;
  if (typeof system === "string") return system === "" ? null : system;
  return blocks(system, path).length === 0 ? null : blockTexts(system, path, "\n\n", "must be 'text'");
}

/** A user turn: its tool results first (each answers a tool_use of the turn before), then what the user says. */
function userTurn(content: unknown, path: string, askedTools: ReadonlySet<string>): ChatMessage[] {
  if (typeof content === "string") return [{ role: "user", content }];
  const results: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  blocks(content, path).forEach((block, i) => {
    const at = `${path}.${i}`;
    const b = record(block, at);
    switch (b.type) {
      case "text":
        parts.push({ type: "text", text: text(b.text, `${at}.text`) });
        return;
      case "image":
        parts.push(image(b.source, `${at}.source`));
        return;
      case "tool_result": {
        const id = text(b.tool_use_id, `${at}.tool_use_id`);
        if (!askedTools.has(id)) throw new BadField(`${at}.tool_use_id`, `no tool_use block with id '${id}' in the assistant turn just before`);
        const isError = optionalBoolean(b.is_error, `${at}.is_error`) ?? false;
        const said = toolResultText(b.content, `${at}.content`);
        results.push({ role: "tool", tool_call_id: id, content: isError ? `Error: ${said}` : said });
        return;
      }
      default:
        throw new BadField(`${at}.type`, `unknown or unsupported content block type ${JSON.stringify(b.type)} in a user turn (expected text, image or tool_result)`);
    }
  });
  if (parts.length > 0) results.push({ role: "user", content: parts });
  if (results.length === 0) throw new BadField(path, "must hold at least one content block");
  return results;
}

function toolResultText(content: unknown, path: string): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  return blockTexts(content, path, "\n", "a tool_result's content blocks must be text here: chat completions carry a tool's answer as text");
}

function image(source: unknown, path: string): ChatContentPart {
  const s = record(source, path);
  if (s.type === "base64") {
    const mediaType = text(s.media_type, `${path}.media_type`);
    if (!/^image\/[a-z0-9.+-]+$/i.test(mediaType)) throw new BadField(`${path}.media_type`, "must be an image media type such as image/png");
    return { type: "image_url", image_url: { url: `data:${mediaType};base64,${text(s.data, `${path}.data`)}` } };
  }
  if (s.type === "url") return { type: "image_url", image_url: { url: text(s.url, `${path}.url`) } };
  throw new BadField(`${path}.type`, "must be 'base64' or 'url'");
}

function assistantTurn(content: unknown, path: string): { message: ChatMessage; toolIds: Set<string> } {
  if (typeof content === "string") return { message: { role: "assistant", content }, toolIds: new Set() };
  const texts: string[] = [];
  const calls: ChatToolCall[] = [];
  blocks(content, path).forEach((block, i) => {
    const at = `${path}.${i}`;
    const b = record(block, at);
    switch (b.type) {
      case "text":
        texts.push(text(b.text, `${at}.text`));
        return;
      case "tool_use":
        calls.push({ id: text(b.id, `${at}.id`), type: "function", function: { name: text(b.name, `${at}.name`), arguments: argumentsText(b.input, `${at}.input`) } });
        return;
      case "thinking":
      case "redacted_thinking":
        return; // the model's earlier reasoning: chat completions have no place for it
      default:
        throw new BadField(`${at}.type`, `unknown or unsupported content block type ${JSON.stringify(b.type)} in an assistant turn (expected text or tool_use)`);
    }
  });
  const message: ChatMessage = { role: "assistant", content: texts.length > 0 ? texts.join("") : null, ...(calls.length > 0 && { tool_calls: calls }) };
  return { message, toolIds: new Set(calls.map((c) => c.id)) };
}

function tool(value: unknown, path: string): Record<string, unknown> {
  const t = record(value, path);
  if (t.type !== undefined && t.type !== null && t.type !== "custom") {
    throw new BadField(`${path}.type`, `server tool ${JSON.stringify(t.type)} is not available through this router: only client tools (name, description, input_schema) are`);
  }
  const fn: Record<string, unknown> = { name: text(t.name, `${path}.name`), parameters: record(t.input_schema, `${path}.input_schema`) };
  const description = optionalText(t.description, `${path}.description`);
  if (description !== undefined) fn.description = description;
  return { type: "function", function: fn };
}

function toolChoice(value: unknown): Record<string, unknown> {
  const c = record(value, "tool_choice");
  const parallel = optionalBoolean(c.disable_parallel_tool_use, "tool_choice.disable_parallel_tool_use") === true ? { parallel_tool_calls: false } : {};
  switch (c.type) {
    case "auto":
      return { tool_choice: "auto", ...parallel };
    case "any":
      return { tool_choice: "required", ...parallel };
    case "none":
      return { tool_choice: "none" };
    case "tool":
      return { tool_choice: { type: "function", function: { name: text(c.name, "tool_choice.name") } }, ...parallel };
    default:
      throw new BadField("tool_choice.type", "must be 'auto', 'any', 'tool' or 'none'");
  }
}
