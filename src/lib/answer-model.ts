export const MODEL_SCAN_CHARS = 4_096; // an answer names its model near its start (OpenAI's and vLLM's JSON and first SSE chunk, Anthropic's message_start)
const MODEL_FIELD = /"model"\s*:\s*"((?:[^"\\\n]|\\.){1,256})"/;

/** The first `"model": "..."` in the start of an answer (a JSON body, or an event stream's first chunk); null when there is none. */
export function answeringModel(text: string): string | null {
  const match = MODEL_FIELD.exec(text.length > MODEL_SCAN_CHARS ? text.slice(0, MODEL_SCAN_CHARS) : text);
  if (!match) return null;
  try {
    return JSON.parse(`"${match[1]}"`) as string;
  } catch {
    return null;
  }
}
