/**
 * The load: closed-loop clients, each sending the next request of one shared queue once
 * its previous answer has streamed to the end. Every request is a streamed chat
 * completion with `stream_options.include_usage`, timed on the client from sending it:
 * TTFT to the first SSE event with content, total to the end of the stream. The router's
 * `x-switchyard-route` (RouteWise) or `x-switchyard-replica` (a pool) names who answered,
 * and `x-switchyard-hedge: fired` marks a hedged request.
 */
import type { ChatRequest } from "../quality/workloads";

export type Outcome =
  | { ok: true; route: string; hedged: boolean; ttftMs: number; totalMs: number; promptTokens: number; outputTokens: number }
  | { ok: false; error: string; route: string | null; hedged: boolean };

export interface Target {
  url: string;
  model: string;
  timeoutMs: number;
}

interface StreamState {
  ttftMs: number | null;
  usage: { prompt_tokens?: number; completion_tokens?: number } | null;
  done: boolean;
}

/** One streamed request; never throws. */
export async function send(target: Target, request: ChatRequest): Promise<Outcome> {
  const started = performance.now();
  const payload = { model: target.model, messages: request.messages, max_tokens: request.maxTokens, stream: true, stream_options: { include_usage: true } };
  let route: string | null = null;
  let hedged = false;
  try {
    const res = await fetch(`${target.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": "127.0.0.1" },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(target.timeoutMs),
    });
    route = res.headers.get("x-switchyard-route") ?? res.headers.get("x-switchyard-replica");
    hedged = res.headers.get("x-switchyard-hedge") === "fired";
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return { ok: false, error: `HTTP ${res.status}`, route, hedged };
    }
    const state: StreamState = { ttftMs: null, usage: null, done: false };
    const decoder = new TextDecoder();
    let pending = "";
    const reader = res.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      pending += decoder.decode(read.value, { stream: true });
      let cut: number;
      while ((cut = pending.indexOf("\n\n")) >= 0) {
        readEvent(pending.slice(0, cut), state, performance.now() - started);
        pending = pending.slice(cut + 2);
      }
    }
    const totalMs = performance.now() - started;
    const problem = !state.done ? "stream ended without [DONE]" : state.ttftMs === null ? "no content" : typeof state.usage?.prompt_tokens !== "number" ? "no usage chunk" : null;
    if (problem !== null || route === null) return { ok: false, error: problem ?? "no route header", route, hedged };
    return { ok: true, route, hedged, ttftMs: state.ttftMs!, totalMs, promptTokens: state.usage!.prompt_tokens!, outputTokens: state.usage!.completion_tokens ?? 0 };
  } catch (err) {
    const e = err as Error;
    return { ok: false, error: e.name === "TimeoutError" ? "timeout" : e.message || e.name, route, hedged };
  }
}

function readEvent(event: string, state: StreamState, atMs: number): void {
  if (!event.startsWith("data: ")) return;
  const data = event.slice(6).trim();
  if (data === "[DONE]") {
    state.done = true;
    return;
  }
  const chunk = JSON.parse(data) as { choices?: { delta?: { content?: string | null } }[]; usage?: StreamState["usage"] };
  if (state.ttftMs === null && chunk.choices?.some((c) => (c.delta?.content ?? "") !== "")) state.ttftMs = atMs;
  if (chunk.usage) state.usage = chunk.usage;
}

export interface Run {
  /** In request order (not completion order). */
  outcomes: Outcome[];
  /** First request sent to last answer finished. */
  elapsedMs: number;
}

/** `concurrency` clients drain one queue of requests. */
export async function closedLoop(target: Target, requests: readonly ChatRequest[], concurrency: number, signal?: AbortSignal): Promise<Run> {
  const outcomes: Outcome[] = new Array(requests.length);
  let next = 0;
  const start = performance.now();
  const client = async () => {
    for (let i = next++; i < requests.length && !signal?.aborted; i = next++) outcomes[i] = await send(target, requests[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests.length) }, client));
  return { outcomes: outcomes.filter((o) => o !== undefined), elapsedMs: performance.now() - start };
}
