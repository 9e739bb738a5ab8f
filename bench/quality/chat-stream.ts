/**
 * One streamed chat completion through the router, timed on the client: time to first
 * token is from sending the request to the first SSE chunk that carries content, and
 * the prompt and cached token counts come from the usage chunk that
 * `stream_options.include_usage` asks for (`usage.prompt_tokens_details.cached_tokens`,
 * as vLLM reports it with --enable-prompt-tokens-details).
 */
import http from "node:http";
import type { ChatRequest } from "./workloads";

export type ChatOutcome =
  | { ok: true; ttftMs: number; totalMs: number; promptTokens: number; cachedTokens: number; replica: string | null; /** performance.now() when it was sent */ sentAt: number }
  | { ok: false; error: string };

export interface ChatTarget {
  agent: http.Agent;
  url: URL;
  model: string;
  timeoutMs: number;
}

interface Usage {
  prompt_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

export function streamChat(target: ChatTarget, request: ChatRequest): Promise<ChatOutcome> {
  const body = Buffer.from(
    JSON.stringify({ model: target.model, messages: request.messages, max_tokens: request.maxTokens, stream: true, stream_options: { include_usage: true } }),
  );
  return new Promise((resolve) => {
    const t0 = performance.now();
    let ttftMs: number | null = null;
    let usage: Usage | null = null;
    let done = false;
    let buffered = "";
    const fail = (error: string) => resolve({ ok: false, error });

    const onEvent = (data: string) => {
      if (data === "[DONE]") {
        done = true;
        return;
      }
      const event = JSON.parse(data) as { choices?: { delta?: { content?: string } }[]; usage?: Usage | null };
      if (ttftMs === null && event.choices?.some((c) => (c.delta?.content ?? "") !== "")) ttftMs = performance.now() - t0;
      if (event.usage) usage = event.usage;
    };

    const req = http.request(
      {
        agent: target.agent,
        host: target.url.hostname,
        port: target.url.port,
        path: "/v1/chat/completions",
        method: "POST",
        headers: { "content-type": "application/json", "content-length": body.length, "cf-connecting-ip": "127.0.0.1" },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const replica = res.headers["x-switchyard-replica"];
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffered += chunk;
          for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
            const event = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            if (status === 200 && event.startsWith("data: ")) {
              try {
                onEvent(event.slice(6));
              } catch {
                res.destroy(new Error("unparsable SSE event"));
              }
            }
          }
        });
        res.once("end", () => {
          if (status !== 200) return fail(`HTTP ${status}`);
          if (!done) return fail("stream ended without [DONE]");
          if (ttftMs === null) return fail("no content chunk");
          const u = usage as Usage | null;
          if (typeof u?.prompt_tokens !== "number") return fail("no usage chunk");
          resolve({
            ok: true,
            ttftMs,
            totalMs: performance.now() - t0,
            promptTokens: u.prompt_tokens,
            cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
            replica: typeof replica === "string" ? replica : null,
            sentAt: t0,
          });
        });
        res.once("error", (err) => fail(err.message));
        res.once("close", () => res.complete || fail("response cut short"));
      },
    );
    req.setTimeout(target.timeoutMs, () => req.destroy(new Error("timeout")));
    req.once("error", (err) => fail((err as NodeJS.ErrnoException).code ?? err.message));
    req.end(body);
  });
}
