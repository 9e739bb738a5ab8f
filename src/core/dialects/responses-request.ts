/**
 * An OpenAI Responses request (`POST /v1/responses`, stateless) as the chat-completions
 * request the model-call layer sends, or the client's 400 naming the field it cannot take.
 *
 *   instructions                        the first system message, joined by "\n\n" with
 *                                       every system and developer item's text, in order
 *   input as a string                   one user message
 *   message items (user, system,        messages (system and developer: see above); parts
 *   developer, assistant)               input_text / output_text / refusal as text,
 *                                       input_image (by URL or data: URL) as image_url
 *   function_call items                 tool_calls of one assistant message (consecutive
 *                                       calls, and text just before them, share it)
 *   function_call_output items          `tool` messages; each must answer an earlier call
 *   reasoning items                     dropped: chat completions cannot carry them back
 *   tools of type function              function tools
 *   hosted tools (web_search, file_search, dropped, and named in `dropped` (the surface
 *   …) and namespace tools              says so in x-switchyard-dropped-tools): chat
 *                                       completions has no form for them, and clients
 *                                       such as Codex send them with every request
 *   tool_choice                         auto / none / required / {type: function, name}
 *   max_output_tokens                   max_tokens
 *   temperature, top_p, user,           as is
 *   parallel_tool_calls
 *   text.format                         response_format (json_object, json_schema)
 *   reasoning.effort                    reasoning_effort
 *   stream                              stream, asking usage (stream_options.include_usage)
 *   store: true, previous_response_id,  refused: the router keeps no responses, so there is
 *   background, conversation,           nothing to continue from or fetch later
 *   item_reference items
 */
import { MAX_OUTPUT_TOKENS_ASKED } from "../config/bounds";
import type { ChatContentPart, ChatMessage, ChatToolCall, Refusal } from "./chat";
import { isRecord } from "./chat";
import { BadField, blocks, list, optionalBoolean, optionalNumber, optionalText, optionalWhole, record, refusing, text } from "./fields";

/** What a Response object repeats of its request. */
export interface ResponsesEcho {
  instructions: string | null;
  metadata: Record<string, unknown> | null;
  temperature: number | null;
  top_p: number | null;
  max_output_tokens: number | null;
  parallel_tool_calls: boolean;
  tool_choice: unknown;
  tools: unknown[];
  /** `text.format` as the request set it (only its known fields), `{type: "text"}` when it set none. */
  format: Record<string, unknown>;
  /** `reasoning.effort` as asked, sent on as chat's `reasoning_effort`. */
  reasoningEffort: string | null;
  user?: string;
}

export interface ResponsesAsChat {
  ok: true;
  chat: Record<string, unknown>;
  model: string;
  stream: boolean;
  user: string | null;
  echo: ResponsesEcho;
  /** Tools the translation left out (`web_search`, `namespace:multi_agent_v1`), in the request's order. */
  dropped: string[];
}

const STATELESS = "this router keeps no responses (it is stateless): send the whole conversation in `input`";

export function responsesToChat(body: Record<string, unknown>): ResponsesAsChat | Refusal {
  return refusing(() => translate(body));
}

function translate(body: Record<string, unknown>): ResponsesAsChat {
  const model = body.model;
  if (typeof model !== "string" || model === "") throw new BadField("model", "is required and must be a non-empty string");
  if (body.store === true) throw new BadField("store", `must be false or absent: ${STATELESS}`);
  for (const field of ["previous_response_id", "conversation"]) {
    if (body[field] !== undefined && body[field] !== null) throw new BadField(field, `is not supported: ${STATELESS}`);
  }
  if (body.background === true) throw new BadField("background", `is not supported: ${STATELESS}`);
  const stream = optionalBoolean(body.stream, "stream") ?? false;

  const items: ChatMessage[] = [];
  const instructions = optionalText(body.instructions, "instructions") ?? null;
  if (instructions) items.push({ role: "system", content: instructions });
  if (typeof body.input === "string") items.push({ role: "user", content: body.input });
  else inputItems(list(body.input, "input"), items);
  if (items.length === 0) throw new BadField("input", "must hold at least one item");
  // One system message, first: `instructions`, then each system or developer item's text in
  // order, as the Messages route does. Many open models' chat templates take one system
  // message and only at the start (Codex sends its instructions and developer items both).
  const systemTexts = items.flatMap((m) => (m.role === "system" && typeof m.content === "string" ? [m.content] : []));
  const messages = items.filter((m) => !(m.role === "system" && typeof m.content === "string"));
  if (systemTexts.length > 0) messages.unshift({ role: "system", content: systemTexts.join("\n\n") });

  const chat: Record<string, unknown> = { model, messages };
  const maxOutput = optionalWhole(body.max_output_tokens, "max_output_tokens", 1, MAX_OUTPUT_TOKENS_ASKED);
  if (maxOutput !== undefined) chat.max_tokens = maxOutput;
  const temperature = optionalNumber(body.temperature, "temperature", 0, 2);
  if (temperature !== undefined) chat.temperature = temperature;
  const topP = optionalNumber(body.top_p, "top_p", 0, 1);
  if (topP !== undefined) chat.top_p = topP;
  const parallel = optionalBoolean(body.parallel_tool_calls, "parallel_tool_calls");
  if (parallel !== undefined) chat.parallel_tool_calls = parallel;
  const user = optionalText(body.user, "user") ?? null;
  if (user !== null) chat.user = user;
  const tools = body.tools === undefined || body.tools === null ? [] : list(body.tools, "tools");
  const dropped: string[] = [];
  const functions = tools.flatMap((t, i) => {
    const translated = tool(t, `tools.${i}`);
    if (typeof translated === "string") {
      dropped.push(translated);
      return [];
    }
    return [translated];
  });
  if (functions.length > 0) chat.tools = functions;
  if (body.tool_choice !== undefined && body.tool_choice !== null) {
    const choice = toolChoice(body.tool_choice);
    if (functions.length > 0 || choice === "none") chat.tool_choice = choice; // with every tool dropped, there is nothing to choose
  }
  if (functions.length === 0) delete chat.parallel_tool_calls;
  const reasoningEffort = effortOf(body.reasoning);
  if (reasoningEffort !== null) chat.reasoning_effort = reasoningEffort;
  const format = textFormat(body.text);
  if (format) chat.response_format = format;
  const echoedFormat: Record<string, unknown> = format?.type === "json_schema" ? { type: "json_schema", ...(format.json_schema as Record<string, unknown>) } : { type: format?.type ?? "text" };
  const metadata = body.metadata === undefined || body.metadata === null ? null : record(body.metadata, "metadata");
  if (stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  const echo: ResponsesEcho = {
    instructions,
    metadata,
    temperature: temperature ?? null,
    top_p: topP ?? null,
    max_output_tokens: maxOutput ?? null,
    parallel_tool_calls: parallel ?? true,
    tool_choice: body.tool_choice ?? "auto",
    tools,
    format: echoedFormat,
    reasoningEffort,
    ...(user !== null && { user }),
  };
  return { ok: true, chat, model, stream, user, echo, dropped };
}

function inputItems(items: unknown[], messages: ChatMessage[]): void {
  const calls = new Set<string>();
  items.forEach((value, i) => {
    const path = `input.${i}`;
    const item = record(value, path);
    const type = item.type ?? "message";
    switch (type) {
      case "message":
        messages.push(message(item, path));
        return;
      case "function_call": {
        const call: ChatToolCall = {
          id: text(item.call_id, `${path}.call_id`),
          type: "function",
          function: { name: text(item.name, `${path}.name`), arguments: text(item.arguments, `${path}.arguments`) },
        };
        calls.add(call.id);
        const last = messages[messages.length - 1];
        if (last?.role === "assistant") last.tool_calls = [...(last.tool_calls ?? []), call];
        else messages.push({ role: "assistant", content: null, tool_calls: [call] });
        return;
      }
      case "function_call_output": {
        const id = text(item.call_id, `${path}.call_id`);
        if (!calls.has(id)) throw new BadField(`${path}.call_id`, `no function_call with call_id '${id}' before it in input`);
        messages.push({ role: "tool", tool_call_id: id, content: outputText(item.output, `${path}.output`) });
        return;
      }
      case "reasoning":
        return; // the model's earlier reasoning: chat completions have no place for it
      case "item_reference":
        throw new BadField(`${path}.type`, `item_reference is not supported: ${STATELESS}`);
      default:
        throw new BadField(`${path}.type`, `unknown or unsupported input item type ${JSON.stringify(type)} (expected message, function_call, function_call_output or reasoning)`);
    }
  });
}

function message(item: Record<string, unknown>, path: string): ChatMessage {
  const role = item.role;
  if (role !== "user" && role !== "assistant" && role !== "system" && role !== "developer") throw new BadField(`${path}.role`, "must be 'user', 'assistant', 'system' or 'developer'");
  const content = item.content;
  if (role === "assistant") return { role: "assistant", content: typeof content === "string" ? content : partsText(content, `${path}.content`, ["output_text", "refusal", "input_text"]) };
  if (role === "system" || role === "developer") return { role: "system", content: typeof content === "string" ? content : partsText(content, `${path}.content`, ["input_text"]) };
  if (typeof content === "string") return { role: "user", content };
  const parts = blocks(content, `${path}.content`).map((p, j) => userPart(p, `${path}.content.${j}`));
  return { role: "user", content: parts };
}

function userPart(value: unknown, path: string): ChatContentPart {
  const part = record(value, path);
  switch (part.type) {
    case "input_text":
      return { type: "text", text: text(part.text, `${path}.text`) };
    case "input_image": {
      if (part.image_url === undefined || part.image_url === null) throw new BadField(`${path}.image_url`, "is required here: images by file_id need the Files API, which this router does not serve");
      const detail = optionalText(part.detail, `${path}.detail`);
      return { type: "image_url", image_url: { url: text(part.image_url, `${path}.image_url`), ...(detail !== undefined && detail !== "auto" && { detail }) } };
    }
    default:
      throw new BadField(`${path}.type`, `unknown or unsupported content part type ${JSON.stringify(part.type)} (expected input_text or input_image)`);
  }
}

/** Text-only content: the parts' texts joined. */
function partsText(content: unknown, path: string, types: readonly string[]): string {
  return blocks(content, path)
    .map((p, j) => {
      const part = record(p, `${path}.${j}`);
      if (typeof part.type !== "string" || !types.includes(part.type)) throw new BadField(`${path}.${j}.type`, `must be one of ${types.join(", ")} here`);
      return text(part.type === "refusal" ? part.refusal : part.text, `${path}.${j}.${part.type === "refusal" ? "refusal" : "text"}`);
    })
    .join("");
}

function outputText(output: unknown, path: string): string {
  if (typeof output === "string") return output;
  return partsText(output, path, ["input_text", "output_text"]);
}

/** A chat function tool, or the name under which a tool chat completions cannot carry is dropped. */
function tool(value: unknown, path: string): Record<string, unknown> | string {
  const t = record(value, path);
  const type = text(t.type, `${path}.type`);
  if (type === "namespace") return `namespace:${text(t.name, `${path}.name`)}`;
  if (type !== "function") return type;
  const parameters = t.parameters === undefined || t.parameters === null ? { type: "object", properties: {} } : record(t.parameters, `${path}.parameters`);
  const fn: Record<string, unknown> = { name: text(t.name, `${path}.name`), parameters };
  const description = optionalText(t.description, `${path}.description`);
  if (description !== undefined) fn.description = description;
  const strict = optionalBoolean(t.strict, `${path}.strict`);
  if (strict !== undefined) fn.strict = strict;
  return { type: "function", function: fn };
}

function toolChoice(value: unknown): unknown {
  if (value === "auto" || value === "none" || value === "required") return value;
  const c = isRecord(value) ? value : null;
  if (c?.type === "function") return { type: "function", function: { name: text(c.name, "tool_choice.name") } };
  throw new BadField("tool_choice", "must be 'auto', 'none', 'required' or {type: 'function', name}");
}

function textFormat(value: unknown): Record<string, unknown> | null {
  if (value === undefined || value === null) return null;
  const format = record(value, "text").format;
  if (format === undefined || format === null) return null;
  const f = record(format, "text.format");
  switch (f.type) {
    case "text":
      return null;
    case "json_object":
      return { type: "json_object" };
    case "json_schema": {
      const schema: Record<string, unknown> = { name: text(f.name, "text.format.name"), schema: record(f.schema, "text.format.schema") };
      const strict = optionalBoolean(f.strict, "text.format.strict");
      if (strict !== undefined) schema.strict = strict;
      const description = optionalText(f.description, "text.format.description");
      if (description !== undefined) schema.description = description;
      return { type: "json_schema", json_schema: schema };
    }
    default:
      throw new BadField("text.format.type", "must be 'text', 'json_object' or 'json_schema'");
  }
}

const EFFORT = /^[a-z]{1,16}$/; // OpenAI's efforts (none, minimal, low, medium, high, …): a word, passed on for the server to judge

/** `reasoning.effort`, or null when the request set none. */
function effortOf(reasoning: unknown): string | null {
  if (reasoning === undefined || reasoning === null) return null;
  const effort = record(reasoning, "reasoning").effort;
  if (effort === undefined || effort === null) return null;
  if (typeof effort !== "string" || !EFFORT.test(effort)) throw new BadField("reasoning.effort", "must be a reasoning effort such as 'low', 'medium' or 'high'");
  return effort;
}
