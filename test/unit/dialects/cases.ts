/**
 * The translation cases of the golden table (golden.json beside this file): each names a
 * translator and its input; golden.json holds what it must produce, reviewed by hand when
 * it was written. `npx tsx test/support/write-dialect-golden.ts` rewrites golden.json from
 * the translators (then review the diff: a changed line is a changed translation).
 */
import type { ChatChunk, ChatCompletion } from "../../../src/core/dialects/chat";

export type Case =
  | { name: string; kind: "anthropic_request"; input: Record<string, unknown> }
  | { name: string; kind: "anthropic_answer"; input: ChatCompletion; stopSequences?: string[] }
  | { name: string; kind: "anthropic_stream"; input: ChatChunk[]; stopSequences?: string[]; broken?: boolean }
  | { name: string; kind: "responses_request"; input: Record<string, unknown> }
  | { name: string; kind: "responses_answer"; input: ChatCompletion; request?: Record<string, unknown> }
  | { name: string; kind: "responses_stream"; input: ChatChunk[]; request?: Record<string, unknown>; broken?: boolean }
  // The other way, for an Anthropic-native replica: chat request to Messages, Messages answer to chat.
  | { name: string; kind: "native_request"; input: Record<string, unknown> }
  | { name: string; kind: "native_answer"; input: Record<string, unknown> }
  | { name: string; kind: "native_stream"; input: { event: string; data: Record<string, unknown> }[]; includeUsage: boolean };

const piece = (delta: Record<string, unknown>, finish: string | null = null): ChatChunk => ({ choices: [{ index: 0, delta, finish_reason: finish }] });
const usageChunk = (prompt: number, completion: number, cached?: number): ChatChunk => ({ choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, ...(cached !== undefined && { prompt_tokens_details: { cached_tokens: cached } }) } });
const WEATHER = { name: "get_weather", description: "Weather in a city", input_schema: { type: "object", properties: { city: { type: "string" } } } };

/** Two tool calls whose arguments arrive in pieces; the second call's name in a piece after its id. */
const TWO_CALLS_STREAM: ChatChunk[] = [
  piece({ role: "assistant", content: "" }),
  piece({ content: "Checking" }),
  piece({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } }] } as never),
  piece({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  piece({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
  piece({ tool_calls: [{ index: 1, id: "call_b", function: { arguments: '{"ci' } }] }),
  piece({ tool_calls: [{ index: 1, function: { name: "get_weather", arguments: 'ty":"Oslo"}' } }] }),
  piece({}, "tool_calls"),
  usageChunk(50, 20),
];

export const CASES: Case[] = [
  {
    name: "system, multi-turn text, metadata, sampling, stream",
    kind: "anthropic_request",
    input: {
      model: "claude-pool",
      max_tokens: 256,
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }, { type: "text", text: "Be kind." }],
      messages: [
        { role: "user", content: "Hi" },
        { role: "assistant", content: [{ type: "thinking", thinking: "hmm", signature: "s" }, { type: "text", text: "Hello." }] },
        { role: "user", content: [{ type: "text", text: "Look:" }, { type: "image", source: { type: "url", url: "https://example.com/cat.png" } }] },
      ],
      temperature: 0.5,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ["END"],
      metadata: { user_id: "user-1" },
      stream: true,
    },
  },
  {
    name: "tools, a forced tool without parallel calls, a tool round trip with an error result",
    kind: "anthropic_request",
    input: {
      model: "m",
      max_tokens: 100,
      tools: [WEATHER],
      tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: [{ type: "text", text: "Let me look." }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }, { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Oslo" } }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }, { type: "text", text: "21 C" }] },
            { type: "tool_result", tool_use_id: "toolu_2", content: "no station", is_error: true },
          ],
        },
      ],
    },
  },
  {
    // As Claude Code 2.1 sends it: its environment as a system message after the user's turn, Anthropic-only
    // fields (thinking, context_management, output_config, a tool's defer_loading) that chat completions has no place for.
    name: "Claude Code's shape: a system message among the turns, Anthropic-only fields read past",
    kind: "anthropic_request",
    input: {
      model: "m",
      max_tokens: 32_000,
      system: [{ type: "text", text: "You are an agent.", cache_control: { type: "ephemeral" } }],
      messages: [
        { role: "user", content: [{ type: "text", text: "<system-reminder>be careful</system-reminder>" }, { type: "text", text: "say hi" }] },
        { role: "system", content: [{ type: "text", text: "# Environment\nPlatform: linux" }] },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } }] },
        { role: "system", content: "A reminder between a tool call and its result." },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "README.md" }] },
      ],
      tools: [{ name: "Bash", description: "Run a command", input_schema: { type: "object", properties: { command: { type: "string" } } }, defer_loading: false }],
      metadata: { user_id: '{"device_id":"d1","session_id":"s1"}' },
      thinking: { type: "adaptive", display: "omitted" },
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
      output_config: { effort: "high" },
      stream: true,
    },
  },
  { name: "tool_choice any, a base64 image", kind: "anthropic_request", input: { model: "m", max_tokens: 1, tool_choice: { type: "any" }, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } }] }] } },
  {
    name: "text with cached prompt tokens",
    kind: "anthropic_answer",
    input: { id: "chatcmpl-1", choices: [{ message: { content: "Hello!" }, finish_reason: "stop" }], usage: { prompt_tokens: 100, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 60 } } },
  },
  {
    name: "two tool calls, one with arguments that are not a JSON object",
    kind: "anthropic_answer",
    input: {
      choices: [{ message: { content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }, { id: "call_b", type: "function", function: { name: "get_weather", arguments: "[1,2" } }] }, finish_reason: "tool_calls" }],
      usage: { prompt_tokens: 10, completion_tokens: 8 },
    },
  },
  { name: "stopped by length, no usage reported (estimated)", kind: "anthropic_answer", input: { choices: [{ message: { content: "abcdefgh" }, finish_reason: "length" }] } },
  {
    name: "a tool call only, no usage reported: its arguments estimated as output, as a stream's are",
    kind: "anthropic_answer",
    input: { choices: [{ message: { content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' } }] }, finish_reason: "tool_calls" }] },
  },
  {
    name: "a tool call only, no usage reported: its arguments estimated as output, as a stream's are",
    kind: "responses_answer",
    input: { choices: [{ message: { content: null, tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' } }] }, finish_reason: "tool_calls" }] },
  },
  { name: "stopped at a stop sequence vLLM names", kind: "anthropic_answer", input: { choices: [{ message: { content: "one" }, finish_reason: "stop", stop_reason: "END" }] }, stopSequences: ["END"] },
  { name: "content filter", kind: "anthropic_answer", input: { choices: [{ message: { content: "" }, finish_reason: "content_filter" }] } },
  { name: "text in pieces, then usage", kind: "anthropic_stream", input: [piece({ role: "assistant", content: "" }), piece({ content: "Hel" }), piece({ content: "lo" }), piece({}, "stop"), usageChunk(7, 2, 3)] },
  { name: "text, then two tool calls in pieces", kind: "anthropic_stream", input: TWO_CALLS_STREAM },
  { name: "a stream that breaks off", kind: "anthropic_stream", input: [piece({ content: "Hel" })], broken: true },
  {
    name: "instructions, every item kind, json_schema output",
    kind: "responses_request",
    input: {
      model: "m",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "Use metric units." },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Weather here?" }, { type: "input_image", image_url: "data:image/png;base64,AAAA", detail: "low" }] },
        { type: "reasoning", id: "rs_1", summary: [] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking.", annotations: [] }] },
        { type: "function_call", call_id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call", call_id: "call_b", name: "get_weather", arguments: '{"city":"Oslo"}' },
        { type: "function_call_output", call_id: "call_a", output: "sunny" },
        { type: "function_call_output", call_id: "call_b", output: [{ type: "input_text", text: "cold" }] },
      ],
      tools: [{ type: "function", name: "get_weather", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "get_weather" },
      max_output_tokens: 300,
      temperature: 1.5,
      parallel_tool_calls: false,
      user: "u-9",
      store: false,
      text: { format: { type: "json_schema", name: "weather", schema: { type: "object" }, strict: true } },
    },
  },
  { name: "a string input, streamed", kind: "responses_request", input: { model: "m", input: "Hello", stream: true } },
  {
    // As Codex 0.169 sends it: developer messages, a namespace of function tools and a hosted web_search
    // tool besides its own function tools, reasoning asked, store false, fields chat completions has no place for.
    name: "Codex's shape: a namespace and a hosted tool dropped, function tools kept",
    kind: "responses_request",
    input: {
      model: "m",
      stream: true,
      store: false,
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "You are Codex." }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "say hi" }] },
      ],
      tools: [
        { type: "function", name: "exec_command", description: "Run a command", strict: false, parameters: { type: "object", properties: { cmd: { type: "string" } } } },
        { type: "namespace", name: "multi_agent_v1", description: "Sub-agents", tools: [{ type: "function", name: "close_agent", parameters: { type: "object", properties: {} } }] },
        { type: "web_search", external_web_access: false },
      ],
      tool_choice: "auto",
      parallel_tool_calls: true,
      reasoning: { summary: "auto" },
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "session-1",
      client_metadata: { turn_id: "t1" },
    },
  },
  {
    name: "only hosted tools: nothing left to choose from, so no tool_choice or parallel_tool_calls upstream",
    kind: "responses_request",
    input: { model: "m", input: "hi", tools: [{ type: "web_search" }, { type: "file_search", vector_store_ids: ["vs_1"] }], tool_choice: "required", parallel_tool_calls: false },
  },
  {
    name: "text and a tool call",
    kind: "responses_answer",
    input: { choices: [{ message: { content: "Checking", tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] }, finish_reason: "tool_calls" }], usage: { prompt_tokens: 20, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 5 } } },
    request: { model: "m", input: "hi", instructions: "Be brief.", metadata: { trace: "t1" } },
  },
  { name: "out of output tokens", kind: "responses_answer", input: { choices: [{ message: { content: "cut" }, finish_reason: "length" }], usage: { prompt_tokens: 2, completion_tokens: 1 } } },
  {
    name: "structured output: the request's text.format echoed",
    kind: "responses_answer",
    input: { choices: [{ message: { content: '{"city":"Paris"}' }, finish_reason: "stop" }], usage: { prompt_tokens: 9, completion_tokens: 6 } },
    request: { model: "m", input: "hi", text: { format: { type: "json_schema", name: "weather", schema: { type: "object" }, strict: true } } },
  },
  { name: "text in pieces, then usage", kind: "responses_stream", input: [piece({ role: "assistant", content: "" }), piece({ content: "Hel" }), piece({ content: "lo" }), piece({}, "stop"), usageChunk(7, 2)] },
  { name: "text, then two tool calls in pieces", kind: "responses_stream", input: TWO_CALLS_STREAM },
  { name: "a stream that breaks off", kind: "responses_stream", input: [piece({ content: "Hel" })], broken: true },
  { name: "out of output tokens, streamed", kind: "responses_stream", input: [piece({ content: "cu" }), piece({ content: "t" }, "length")] },
  { name: "stopped at a stop sequence, streamed, no usage reported", kind: "anthropic_stream", input: [piece({ content: "one two" }), { choices: [{ index: 0, delta: {}, finish_reason: "stop", stop_reason: "END" }] }], stopSequences: ["END"] },
  {
    name: "system and developer, images, a tool round trip, consecutive roles merged, sampling",
    kind: "native_request",
    input: {
      model: "client-name",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Metric units." }] },
        { role: "user", content: [{ type: "text", text: "This city?" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }, { type: "image_url", image_url: { url: "https://example.com/c.png" } }] },
        { role: "assistant", content: "Checking.", tool_calls: [{ id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }, { id: "call_b", type: "function", function: { name: "get_weather", arguments: "not json" } }] },
        { role: "tool", tool_call_id: "call_a", content: "sunny" },
        { role: "tool", tool_call_id: "call_b", content: [{ type: "text", text: "cold" }] },
        { role: "user", content: "Summarize." },
      ],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      max_completion_tokens: 200,
      temperature: 1.7,
      stop: "END",
      user: "u-5",
      stream: true,
      stream_options: { include_usage: true },
    },
  },
  { name: "no max_tokens: the default", kind: "native_request", input: { model: "m", messages: [{ role: "user", content: "hi" }] } },
  { name: "n > 1 refused", kind: "native_request", input: { model: "m", n: 2, messages: [{ role: "user", content: "hi" }] } },
  { name: "structured output refused, not dropped", kind: "native_request", input: { model: "m", response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } }, messages: [{ role: "user", content: "hi" }] } },
  { name: "vLLM's constrained decoding refused, not dropped", kind: "native_request", input: { model: "m", guided_json: { type: "object" }, messages: [{ role: "user", content: "hi" }] } },
  { name: "log probabilities refused", kind: "native_request", input: { model: "m", logprobs: true, messages: [{ role: "user", content: "hi" }] } },
  { name: "a text format, a seed and penalties: hints, dropped", kind: "native_request", input: { model: "m", response_format: { type: "text" }, seed: 7, presence_penalty: 0.5, logprobs: false, messages: [{ role: "user", content: "hi" }] } },
  {
    name: "text and a tool call, cache reads in the prompt",
    kind: "native_answer",
    input: { id: "msg_1", type: "message", role: "assistant", content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "Checking" }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } }], stop_reason: "tool_use", stop_sequence: null, usage: { input_tokens: 10, cache_read_input_tokens: 20, output_tokens: 6 } },
  },
  { name: "a stop sequence met", kind: "native_answer", input: { type: "message", content: [{ type: "text", text: "one" }], stop_reason: "stop_sequence", stop_sequence: "END", usage: { input_tokens: 3, output_tokens: 1 } } },
  {
    name: "text, then a tool call in pieces, usage asked",
    kind: "native_stream",
    includeUsage: true,
    input: [
      { event: "message_start", data: { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 12, cache_read_input_tokens: 3, output_tokens: 1 } } } },
      { event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } } },
      { event: "ping", data: { type: "ping" } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } } },
      { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
      { event: "content_block_start", data: { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_1", name: "get_weather", input: {} } } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"city":' } } },
      { event: "content_block_delta", data: { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '"Paris"}' } } },
      { event: "content_block_stop", data: { type: "content_block_stop", index: 1 } },
      { event: "message_delta", data: { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 9 } } },
      { event: "message_stop", data: { type: "message_stop" } },
    ],
  },
  {
    name: "an error event mid-stream, usage not asked",
    kind: "native_stream",
    includeUsage: false,
    input: [
      { event: "message_start", data: { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 1, output_tokens: 1 } } } },
      { event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } },
    ],
  },
];
