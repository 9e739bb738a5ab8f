import type { Attempt, BodyEnd } from "../../core/upstream/attempts";
import { clientResponseHeaders } from "../../core/upstream/headers";

/** One place an attempt can go: a pool's replica, or a graph step's URL. */
export interface Target {
  /** Names the target in attempts, headers and messages (a replica id, a step label); never a URL. */
  id: string;
  /** Where the request goes, fully resolved. Only ever a URL the config names. */
  url: string;
  /** Sent as `Authorization: Bearer`, replacing whatever the headers carry. */
  apiKey?: string | undefined;
}

export interface ExchangePolicy {
  /** Each try's time to response headers. */
  tryTimeoutMs: number;
  /** The whole exchange: tries, backoffs and the streamed body. */
  deadlineMs: number;
  /** An answer with this status sends the exchange on to the next try. */
  retryable(status: number): boolean;
  /**
   * What a retryable answer on the last try is: true (graph steps, as KServe) delivers it
   * as the answer; false (pools) makes the exchange a failure the router words itself.
   */
  deliverLastAnswer: boolean;
  /** Milliseconds to wait before retry n (1-based), or none. */
  backoffMs?: (retry: number) => number;
}

export interface ExchangeInput {
  /** Tried in order, one try each (a target listed twice is tried twice). */
  targets: readonly Target[];
  /** The request headers, already filtered by the caller's header policy. */
  headers: Headers;
  body: Uint8Array | string;
  policy: ExchangePolicy;
  /** Fires when whoever asked goes away (`request.signal`, a cancelled graph branch). */
  signal: AbortSignal | undefined;
  startedAt: number;
  /** Keeps the body pump alive after the response is returned (`ctx.waitUntil`). */
  waitUntil: (promise: Promise<unknown>) => void;
  /** A try is about to be sent (index 0 = the first choice). */
  onAttemptStart?: (target: Target, index: number) => void;
  /** Called once, when a delivered response's body has ended, with how it ended. */
  onBodyEnd?: (attempts: readonly Attempt[], bodyEnd: BodyEnd) => void;
  /**
   * Called at least every `everyMs` while a try waits for headers or its body streams:
   * the caller's heartbeat rides on the engine's own timer instead of a second one.
   */
  tick?: { everyMs: number; run: () => void };
  /**
   * Called once with the milliseconds from a delivered try's start to the first chunk of
   * its event stream (an LLM's time to first token). Only `text/event-stream` bodies are
   * timed: a handed-over body's first byte is not seen by the router, and a chunked JSON
   * body's first chunk comes with the whole answer.
   */
  onFirstChunk?: (target: Target, ms: number) => void;
}

export type ExchangeResult =
  | { delivered: true; response: Response; attempts: Attempt[] }
  | { delivered: false; attempts: Attempt[]; deadlineHit: boolean };

class TryTimeout extends Error {}
class DeadlineExceeded extends Error {}
class ClientGone extends Error {}

const HANDOVER_MAX_BYTES = 1024 * 1024; // a fixed-length body up to 1 MiB goes to the client unpumped (a completion is a few KB)

/**
 * The one attempt engine: pools (src/platform/surfaces/inference.ts) and graph steps (src/app/model-call/graph.ts)
 * both send their requests through here. It tries targets in order until one answers
 * with a status that is not retried. Each try gets `tryTimeoutMs` to produce response
 * headers; the whole exchange, streamed body included, gets `deadlineMs`. Retrying
 * happens only before the Response is returned, so never after a byte has reached the
 * client, and never after the one who asked has gone (that try counts as neither success
 * nor failure).
 *
 * A streamed body (SSE, or any body of unknown or large length) is pumped through an
 * IdentityTransformStream: chunks are forwarded as they arrive, the pump's end tells how
 * the exchange ended, and the pump keeps the request's JavaScript alive so the deadline
 * can cut it. A small fixed-length body (a non-streamed completion, by far the common
 * case) is handed to the client as the upstream's own stream instead: workerd then
 * moves the bytes natively and runs none of the request's JavaScript any more. Pumping
 * it cost about 15% of a pass-through Worker's throughput here; cutting it at the
 * deadline would buy nothing, as its bytes are already on their way.
 */
export async function exchange(input: ExchangeInput): Promise<ExchangeResult> {
  const { policy, targets } = input;
  const deadlineAt = input.startedAt + policy.deadlineMs;
  const attempts: Attempt[] = [];

  for (let i = 0; i < targets.length; i++) {
    const target = targets[i]!;
    if (i > 0 && policy.backoffMs) await sleep(Math.min(policy.backoffMs(i), Math.max(0, deadlineAt - Date.now())), input.signal);
    const tryStart = Date.now();
    const remaining = deadlineAt - tryStart;
    if (remaining <= 0) return { delivered: false, attempts, deadlineHit: true };
    if (input.signal?.aborted) {
      attempts.push({ replica: target.id, outcome: { kind: "client_gone" }, ms: 0 });
      return { delivered: false, attempts, deadlineHit: false };
    }

    const controller = new AbortController();
    const onGone = () => controller.abort(new ClientGone());
    input.signal?.addEventListener("abort", onGone);
    const release = () => input.signal?.removeEventListener("abort", onGone);
    const clock = new TryClock(controller, tryStart, deadlineAt, policy.tryTimeoutMs, input.tick);
    input.onAttemptStart?.(target, i);

    let upstream: Response;
    try {
      upstream = await fetch(target.url, { method: "POST", headers: withKey(input.headers, target.apiKey), body: input.body, signal: controller.signal });
    } catch (error) {
      clock.stop();
      release();
      const reason: unknown = controller.signal.reason;
      const ms = Date.now() - tryStart;
      if (reason instanceof ClientGone) {
        attempts.push({ replica: target.id, outcome: { kind: "client_gone" }, ms });
        return { delivered: false, attempts, deadlineHit: false };
      }
      if (reason instanceof DeadlineExceeded) {
        attempts.push({ replica: target.id, outcome: { kind: "deadline" }, ms });
        return { delivered: false, attempts, deadlineHit: true };
      }
      const outcome = reason instanceof TryTimeout ? { kind: "timeout" as const } : { kind: "connect_error" as const, message: errorMessage(error) };
      attempts.push({ replica: target.id, outcome, ms });
      continue;
    }

    const ms = Date.now() - tryStart;
    const last = i === targets.length - 1;
    if (policy.retryable(upstream.status) && !(last && policy.deliverLastAnswer)) {
      clock.stop();
      release();
      attempts.push({ replica: target.id, outcome: { kind: "retryable_status", status: upstream.status }, ms });
      input.waitUntil(upstream.body?.cancel().catch(() => {}) ?? Promise.resolve());
      continue;
    }

    // From here only the deadline can cut the exchange.
    clock.headersArrived();
    attempts.push({ replica: target.id, outcome: { kind: "answered", status: upstream.status }, ms });
    const headers = clientResponseHeaders(upstream.headers);
    headers.set("x-switchyard-replica", target.id);
    headers.set("x-switchyard-attempts", String(attempts.length));
    const init = { status: upstream.status, statusText: upstream.statusText, headers };
    if (!upstream.body || handOver(upstream.headers)) {
      // A small body of fixed length is on its way already: it goes to the client as the
      // upstream's own stream, and the exchange counts as complete now (a break inside
      // it goes unnoticed by the circuits; the client still sees it).
      clock.stop();
      release();
      input.onBodyEnd?.(attempts, "complete");
      return { delivered: true, response: new Response(upstream.body, init), attempts };
    }

    const pipe = new IdentityTransformStream();
    const body = upstream.body;
    // Only an event stream's first chunk is a first token; a chunked JSON body's is the whole answer.
    const timed = (upstream.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream") ? input.onFirstChunk : undefined;
    const pumped = (timed ? pumpTimingFirstChunk(body, pipe.writable, () => timed(target, Date.now() - tryStart)) : body.pipeTo(pipe.writable))
      .then(
        (): BodyEnd => "complete",
        (): BodyEnd => {
          // Work out why before aborting: the abort below would blur the cause.
          const end: BodyEnd = input.signal?.aborted ? "client_gone" : controller.signal.reason instanceof DeadlineExceeded ? "deadline" : "broken";
          controller.abort(new ClientGone());
          return end;
        },
      )
      .then((end) => {
        clock.stop();
        release();
        input.onBodyEnd?.(attempts, end);
      });
    input.waitUntil(pumped);
    return { delivered: true, response: new Response(pipe.readable, init), attempts };
  }
  return { delivered: false, attempts, deadlineHit: Date.now() >= deadlineAt };
}

/**
 * Moves the first chunk by hand to time it, then hands the rest to the native pipe: one
 * JavaScript hop per request, not one per chunk.
 */
async function pumpTimingFirstChunk(body: ReadableStream<Uint8Array>, sink: WritableStream<Uint8Array>, onFirst: () => void): Promise<void> {
  const reader = body.getReader();
  let first: ReadableStreamReadResult<Uint8Array>;
  try {
    first = await reader.read();
  } catch (error) {
    await sink.abort(error).catch(() => {}); // as pipeTo does: the client's stream fails too
    throw error;
  }
  const writer = sink.getWriter();
  try {
    if (first.done) {
      await writer.close();
      return;
    }
    onFirst();
    await writer.write(first.value);
  } catch (error) {
    await writer.abort(error).catch(() => {});
    await reader.cancel(error).catch(() => {});
    throw error;
  }
  reader.releaseLock();
  writer.releaseLock();
  await body.pipeTo(sink);
}

function withKey(headers: Headers, apiKey: string | undefined): Headers {
  if (!apiKey) return headers;
  const keyed = new Headers(headers);
  keyed.set("authorization", `Bearer ${apiKey}`);
  return keyed;
}

/** The body has a declared length within HANDOVER_MAX_BYTES and is not re-encoded on the way. */
function handOver(headers: Headers): boolean {
  if (headers.has("content-encoding")) return false;
  const length = Number(headers.get("content-length") ?? NaN);
  return length >= 0 && length <= HANDOVER_MAX_BYTES;
}

/** Waits `ms`, or less if `signal` fires first. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done);
  });
}

/**
 * One timer per try: it fires at the try's header timeout (or the deadline, if sooner),
 * then, once headers have arrived, at the deadline; with a `tick`, also every
 * `tick.everyMs` in between, to run it. Arming and clearing a timer per phase, and a
 * second per-request timer for the caller's heartbeat, showed in profiles.
 */
class TryClock {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #headers = false;
  readonly #headersBy: number;
  readonly #deadlineFirst: boolean;

  constructor(
    private readonly controller: AbortController,
    tryStart: number,
    private readonly deadlineAt: number,
    tryTimeoutMs: number,
    private readonly tick: { everyMs: number; run: () => void } | undefined,
  ) {
    const budget = Math.min(tryTimeoutMs, deadlineAt - tryStart);
    this.#deadlineFirst = budget < tryTimeoutMs;
    this.#headersBy = tryStart + budget;
    this.#arm(tryStart);
  }

  headersArrived(): void {
    this.#headers = true;
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(now: number): void {
    const wait = Math.max(0, (this.#headers ? this.deadlineAt : this.#headersBy) - now);
    this.#timer = setTimeout(() => this.#fire(), this.tick ? Math.min(wait, this.tick.everyMs) : wait);
  }

  #fire(): void {
    const now = Date.now();
    // The reason is built only now: an Error captures a stack, which costs.
    if (!this.#headers && now >= this.#headersBy) return this.controller.abort(this.#deadlineFirst ? new DeadlineExceeded() : new TryTimeout());
    if (this.#headers && now >= this.deadlineAt) return this.controller.abort(new DeadlineExceeded());
    this.tick?.run();
    this.#arm(now);
  }
}

/** A fetch error's text, without any URL credential it might quote. */
function errorMessage(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\/\/[^/@\s"]*@/g, "//");
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
