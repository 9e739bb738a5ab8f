/**
 * Attempt spans as an observer of the one attempt engine (src/app/engine/engine.ts): one
 * CLIENT span per try, whatever ended it (an answer, a retryable status, a timeout, a
 * refused connection, the client leaving, a hedge lost), and each try's request carries a
 * `traceparent` naming its own span. No second path to upstream: the engine tells, this
 * records.
 */
import type { Attributes } from "../../core/telemetry/span";
import type { AttemptOutcome } from "../../core/upstream/attempts";
import { answeringModel, MODEL_SCAN_CHARS } from "../../lib/answer-model";
import type { AttemptInfo, PlanObserver } from "../engine/plan";
import type { Span } from "./trace";

/** The observers a plan adds for its attempts' spans under `parent`; none when the request does not propagate. */
export function attemptSpans(parent: Span | undefined): PlanObserver[] {
  if (!parent?.trace.propagating) return [];
  const spans = new Map<AttemptInfo, Span>();
  let previous: string | null = null; // why the last try did not deliver: the next one's retry reason
  let hedgeOf: AttemptInfo | null = null;
  return [
    {
      started(a) {
        const genAi = parent.trace.genAi;
        const span = parent.child(genAi ? `${genAi.operation} ${genAi.model}` : `attempt ${a.target.id}`, "client", {
          ...genAi && { "gen_ai.operation.name": genAi.operation, "gen_ai.request.model": genAi.model },
          "gen_ai.provider.name": a.target.dialect === "anthropic" ? "anthropic" : "openai",
          ...serverOf(a.target.url),
          "switchyard.target": a.target.id,
          "switchyard.attempt.index": a.index,
          ...(previous !== null && { "switchyard.retry_reason": previous }),
        });
        spans.set(a, span);
      },
      stamp(a, headers) {
        const traceparent = spans.get(a)?.traceparent;
        if (traceparent) headers.set("traceparent", traceparent);
      },
      firstChunk(a, ms) {
        spans.get(a)?.set({ "switchyard.ttfb_ms": ms }).event("first_chunk");
      },
      // A pool's answer is otherwise handed over unread: only a recorded trace reads its first chunk for the model it names.
      ...(parent.trace.mode === "recording" && {
        answerStart(a: AttemptInfo, chunk: Uint8Array) {
          const model = answerChunkModel(chunk);
          if (model !== null) spans.get(a)?.set({ "gen_ai.response.model": model });
        },
      }),
      hedged(primary, secondary) {
        hedgeOf = primary;
        spans.get(primary)?.event("hedge_sent", { "switchyard.hedge.target": secondary.target.id });
        spans.get(secondary)?.set({ "switchyard.hedge": true, "switchyard.retry_reason": "hedge" });
      },
      delivered(winner, hedged) {
        spans.get(winner)?.set({ "switchyard.won": true, ...(hedged && { "switchyard.hedge.won_by": winner === hedgeOf ? "primary" : "hedge" }) });
      },
      ended(a, end) {
        const span = spans.get(a);
        if (!span) return; // never sent (the client left or the deadline passed first)
        spans.delete(a);
        const { outcome } = end.attempt;
        const usage = end.usage;
        span.set({
          "switchyard.attempt.outcome": outcome.kind,
          "switchyard.attempt.ms": end.attempt.ms,
          ...(status(outcome) !== null && { "http.response.status_code": status(outcome)! }),
          ...(end.firstByteMs !== null && { "switchyard.ttfb_ms": end.firstByteMs }),
          ...(end.body !== null && { "switchyard.body_end": end.body }),
          ...(usage && usageAttributes(usage)),
        });
        const failure = failureType(outcome, end.body);
        if (failure !== null) {
          span.fail(failure);
          previous = failure;
        }
        span.end();
      },
    },
  ];
}

function status(outcome: AttemptOutcome): number | null {
  return outcome.kind === "answered" || outcome.kind === "retryable_status" ? outcome.status : null;
}

/** OTel's `error.type` for a try: its status code when it answered with an error, else what stopped it. */
function failureType(outcome: AttemptOutcome, body: string | null): string | null {
  switch (outcome.kind) {
    case "answered":
      if (outcome.status >= 400) return String(outcome.status);
      return body === "broken" || body === "deadline" ? `body_${body}` : null;
    case "retryable_status":
      return String(outcome.status);
    case "cancelled":
      return null; // a hedge's loser: the router stopped it, the upstream did nothing wrong
    default:
      return outcome.kind;
  }
}

/** The first `"model": "..."` in the start of an answer (a JSON body or an event stream's first chunk), or null. */
export function answerChunkModel(chunk: Uint8Array): string | null {
  return answeringModel(new TextDecoder().decode(chunk.subarray(0, MODEL_SCAN_CHARS)));
}

function usageAttributes(usage: { promptTokens: number | null; outputTokens: number; reported: boolean; model?: string }): Attributes {
  return {
    "gen_ai.response.model": usage.model,
    ...(usage.promptTokens !== null && { "gen_ai.usage.input_tokens": usage.promptTokens }),
    "gen_ai.usage.output_tokens": usage.outputTokens,
    "switchyard.usage.reported": usage.reported,
  };
}

/** `server.address` and `server.port` of a target (never the full URL: its path or query may hold a secret). */
function serverOf(url: string): Attributes {
  try {
    const u = new URL(url);
    return { "server.address": u.hostname, "server.port": Number(u.port || (u.protocol === "https:" ? 443 : 80)) };
  } catch {
    return {};
  }
}
