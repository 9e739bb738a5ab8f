/**
 * A chat-completions request as the Anthropic Messages request an Anthropic-native
 * upstream takes (a replica declared `dialect: anthropic`), or the refusal naming what
 * cannot be said there.
 *
 *   system / developer messages    `system`, their texts joined by "\n\n"
 *   user text and image_url parts  text and image blocks (a data: URL as base64)
 *   assistant content, tool_calls  text and tool_use blocks (arguments parsed; not a
 *                                  JSON object: `{}`)
 *   tool messages                  tool_result blocks of the next user turn
 *   consecutive turns of one role  merged into one turn, as Anthropic requires
 *   max_completion_tokens,         max_tokens, which Anthropic requires: DEFAULT_MAX_TOKENS
 *   max_tokens                     when the request sets neither
 *   stop (string or list)          stop_sequences
 *   temperature                    as is, at most 1 (Anthropic's range; above is clamped)
 *   top_p, stream                  as is
 *   tools, tool_choice             tools (input_schema), auto / any / tool / none;
 *   parallel_tool_calls: false     disable_parallel_tool_use
 *   user                           metadata.user_id
 *   n > 1                          refused: Anthropic answers once
 *   response_format (not text),    refused: Messages has no structured output mode,
 *   logprobs, top_logprobs,        log probabilities or constrained decoding
 *   guided_* and the like
 *   seed, presence/frequency       dropped: hints Messages has no place for
 *   penalties, logit_bias,
 *   reasoning_effort
 */
import type { Refusal } from "./chat";
import { isRecord } from "./chat";
import { toolInput } from "./anthropic-answer";
import { BadField, blockTexts, list, optionalNumber, optionalText, optionalWhole, record, refusing, text } from "./fields";
import { MAX_OUTPUT_TOKENS_ASKED } from "../config/bounds";

/** vLLM's and SGLang's constrained-decoding fields: each a guarantee about the answer's form, so refused rather than dropped. */
const CONSTRAINED_DECODING = ["guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs", "regex", "ebnf", "json_schema"] as const;

/** Output tokens asked of an Anthropic-native upstream when a chat request names none (Anthropic requires a number). */
export const DEFAULT_MAX_TOKENS = 4_096;

type Block = Record<string, unknown>;
interface Turn {
  role: "user" | "assistant";
  content: Block[];
}

export function chatToAnthropicRequest(chat: Record<string, unknown>, model: string): { ok: true; body: Record<string, unknown> } | Refusal {
  return refusing(() => ({ ok: true as const, body: translate(chat, model) }));
}

function translate(chat: Record<string, unknown>, model: string): Record<string, unknown> {
  if (chat.n !== undefined && chat.n !== null && chat.n !== 1) throw new BadField("n", "must be 1: an Anthropic-native upstream answers once");
  // Asked-for guarantees Messages cannot give: dropped, the answer would claim what it is not (prose for a schema).
  const format = isRecord(chat.response_format) ? chat.response_format.type : undefined;
  if (format !== undefined && format !== "text") throw new BadField("response_format", `type ${JSON.stringify(format)} is not carried to an Anthropic-native upstream (Messages has no structured output mode)`);
  if (chat.logprobs === true || (chat.top_logprobs !== undefined && chat.top_logprobs !== null && chat.top_logprobs !== 0)) throw new BadField("logprobs", "an Anthropic-native upstream gives no log probabilities");
  for (const field of CONSTRAINED_DECODING) {
    if (chat[field] !== undefined && chat[field] !== null) throw new BadField(field, "is not carried to an Anthropic-native upstream (Messages has no constrained decoding)");
  }
  const system: string[] = [];
  const turns: Turn[] = [];
  const say = (role: Turn["role"], blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  list(chat.messages, "messages").forEach((value, i) => {
    const path = `messages.${i}`;
    const m = record(value, path);
    switch (m.role) {
      case "system":
      case "developer":
        system.push(contentText(m.content, `${path}.content`));
        return;
      case "user":
        say("user", userBlocks(m.content, `${path}.content`));
        return;
      case "assistant": {
        const blocks: Block[] = [];
        const said = m.content === null || m.content === undefined ? "" : contentText(m.content, `${path}.content`);
        if (said !== "") blocks.push({ type: "text", text: said });
        if (m.tool_calls !== undefined && m.tool_calls !== null) {
          list(m.tool_calls, `${path}.tool_calls`).forEach((call, j) => {
            const c = record(call, `${path}.tool_calls.${j}`);
            const fn = record(c.function, `${path}.tool_calls.${j}.function`);
            blocks.push({ type: "tool_use", id: text(c.id, `${path}.tool_calls.${j}.id`), name: text(fn.name, `${path}.tool_calls.${j}.function.name`), input: toolInput(optionalText(fn.arguments, `${path}.tool_calls.${j}.function.arguments`) ?? "") });
          });
        }
        say("assistant", blocks);
        return;
      }
      case "tool":
        say("user", [{ type: "tool_result", tool_use_id: text(m.tool_call_id, `${path}.tool_call_id`), content: contentText(m.content, `${path}.content`) }]);
        return;
      default:
        throw new BadField(`${path}.role`, "must be system, developer, user, assistant or tool for an Anthropic-native upstream");
    }
  });
  if (turns.length === 0) throw new BadField("messages", "must hold at least one user or assistant message");

  const body: Record<string, unknown> = { model, messages: turns };
  if (system.length > 0) body.system = system.join("\n\n");
  body.max_tokens = optionalWhole(chat.max_completion_tokens, "max_completion_tokens", 1, MAX_OUTPUT_TOKENS_ASKED) ?? optionalWhole(chat.max_tokens, "max_tokens", 1, MAX_OUTPUT_TOKENS_ASKED) ?? DEFAULT_MAX_TOKENS;
  const temperature = optionalNumber(chat.temperature, "temperature", 0, 2);
  if (temperature !== undefined) body.temperature = Math.min(temperature, 1);
  const topP = optionalNumber(chat.top_p, "top_p", 0, 1);
  if (topP !== undefined) body.top_p = topP;
  if (typeof chat.stop === "string") body.stop_sequences = [chat.stop];
  else if (Array.isArray(chat.stop)) body.stop_sequences = chat.stop.map((s, i) => text(s, `stop.${i}`));
  if (Array.isArray(chat.tools) && chat.tools.length > 0) body.tools = chat.tools.map((t, i) => tool(t, `tools.${i}`));
  const choice = toolChoice(chat.tool_choice, chat.parallel_tool_calls === false);
  if (choice) body.tool_choice = choice;
  const user = optionalText(chat.user, "user");
  if (user !== undefined) body.metadata = { user_id: user };
  if (chat.stream === true) body.stream = true;
  return body;
}

function contentText(content: unknown, path: string): string {
  if (typeof content === "string") return content;
  return blockTexts(content, path, "", "must be text here");
}

function userBlocks(content: unknown, path: string): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return list(content, path).map((p, i) => {
    const part = record(p, `${path}.${i}`);
    if (part.type === "text") return { type: "text", text: text(part.text, `${path}.${i}.text`) };
    if (part.type === "image_url") {
      const url = text(record(part.image_url, `${path}.${i}.image_url`).url, `${path}.${i}.image_url.url`);
      const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
      return { type: "image", source: data ? { type: "base64", media_type: data[1], data: data[2] } : { type: "url", url } };
    }
    throw new BadField(`${path}.${i}.type`, `content part type ${JSON.stringify(part.type)} cannot be sent to an Anthropic-native upstream (text and image_url can)`);
  });
}

function tool(value: unknown, path: string): Block {
  const t = record(value, path);
  if (t.type !== "function") throw new BadField(`${path}.type`, "must be 'function'");
  const fn = record(t.function, `${path}.function`);
  const out: Block = { name: text(fn.name, `${path}.function.name`), input_schema: isRecord(fn.parameters) ? fn.parameters : { type: "object", properties: {} } };
  const description = optionalText(fn.description, `${path}.function.description`);
  if (description !== undefined) out.description = description;
  return out;
}

function toolChoice(choice: unknown, noParallel: boolean): Block | null {
  const parallel = noParallel ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined || choice === null) return noParallel ? { type: "auto", ...parallel } : null;
  if (choice === "auto") return { type: "auto", ...parallel };
  if (choice === "required") return { type: "any", ...parallel };
  if (choice === "none") return { type: "none" };
  const c = record(choice, "tool_choice");
  if (c.type === "function") return { type: "tool", name: text(record(c.function, "tool_choice.function").name, "tool_choice.function.name"), ...parallel };
  throw new BadField("tool_choice", "must be 'auto', 'required', 'none' or {type: 'function', function: {name}}");
}
