import type { RoutingDefaults } from "../config/schema";
import type { RouteReplica } from "../routing/route-table";
import type { Attempt, BodyEnd } from "./attempts";
import { clientResponseHeaders, upstreamRequestHeaders } from "./headers";
import { replicaUrl } from "./url";

export interface ProxyInput {
  apiPath: string;
  body: Uint8Array | string;
  clientHeaders: Headers;
  /** Fallback order; the first is the weighted pick. */
  candidates: readonly RouteReplica[];
  routing: RoutingDefaults;
  /** Fires when the client goes away (`request.signal`). */
  clientSignal: AbortSignal | undefined;
  startedAt: number;
  /** Keeps the body pump alive after the response is returned (`ctx.waitUntil`). */
  waitUntil: (promise: Promise<unknown>) => void;
  /** A try is about to be sent to this replica (index 0 = the first choice). */
  onAttemptStart?: (replica: RouteReplica, index: number) => void;
  /** Called once, when a delivered response's body has ended, with how it ended. */
  onBodyEnd?: (attempts: readonly Attempt[], bodyEnd: BodyEnd) => void;
}

export type ProxyResult =
  | { delivered: true; response: Response; attempts: Attempt[] }
  | { delivered: false; attempts: Attempt[]; deadlineHit: boolean };

const HANDOVER_MAX_BYTES = 1024 * 1024; // a fixed-length body up to 1 MiB goes to the client unpumped (a completion is a few KB)

/** The body has a declared length within HANDOVER_MAX_BYTES and is not re-encoded on the way. */
function handOver(headers: Headers): boolean {
  if (headers.has("content-encoding")) return false;
  const length = Number(headers.get("content-length") ?? NaN);
  return length >= 0 && length <= HANDOVER_MAX_BYTES;
}

class TryTimeout extends Error {}
class DeadlineExceeded extends Error {}
class ClientGone extends Error {}

/**
 * Tries candidates in order until one answers with a status that is not retried. Each
 * try gets `try_timeout_ms` to produce response headers; the whole exchange, streamed
 * body included, gets `deadline_ms`. Retrying happens only before the Response is
 * returned, so never after a byte has reached the client.
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
export async function proxyWithFallback(input: ProxyInput): Promise<ProxyResult> {
  const { routing, candidates } = input;
  const deadlineAt = input.startedAt + routing.deadline_ms;
  const maxAttempts = Math.min(routing.max_attempts ?? Infinity, candidates.length);
  const attempts: Attempt[] = [];

  for (let i = 0; i < maxAttempts; i++) {
    const replica = candidates[i]!;
    const tryStart = Date.now();
    const remaining = deadlineAt - tryStart;
    if (remaining <= 0) return { delivered: false, attempts, deadlineHit: true };
    if (input.clientSignal?.aborted) {
      attempts.push({ replica: replica.id, outcome: { kind: "client_gone" }, ms: 0 });
      return { delivered: false, attempts, deadlineHit: false };
    }

    const controller = new AbortController();
    const onClientGone = () => controller.abort(new ClientGone());
    input.clientSignal?.addEventListener("abort", onClientGone);
    const release = () => input.clientSignal?.removeEventListener("abort", onClientGone);
    const clock = new TryClock(controller, tryStart, deadlineAt, routing.try_timeout_ms);
    input.onAttemptStart?.(replica, i);

    let upstream: Response;
    try {
      upstream = await fetch(replicaUrl(replica, input.apiPath), {
        method: "POST",
        headers: upstreamRequestHeaders(input.clientHeaders, replica.api_key),
        body: input.body,
        signal: controller.signal,
      });
    } catch (error) {
      clock.stop();
      release();
      const reason: unknown = controller.signal.reason;
      const ms = Date.now() - tryStart;
      if (reason instanceof ClientGone) {
        attempts.push({ replica: replica.id, outcome: { kind: "client_gone" }, ms });
        return { delivered: false, attempts, deadlineHit: false };
      }
      if (reason instanceof DeadlineExceeded) {
        attempts.push({ replica: replica.id, outcome: { kind: "deadline" }, ms });
        return { delivered: false, attempts, deadlineHit: true };
      }
      const outcome = reason instanceof TryTimeout ? { kind: "timeout" as const } : { kind: "connect_error" as const, message: errorMessage(error) };
      attempts.push({ replica: replica.id, outcome, ms });
      continue;
    }

    const ms = Date.now() - tryStart;
    if (routing.retry_on.includes(upstream.status)) {
      clock.stop();
      release();
      attempts.push({ replica: replica.id, outcome: { kind: "retryable_status", status: upstream.status }, ms });
      input.waitUntil(upstream.body?.cancel().catch(() => {}) ?? Promise.resolve());
      continue;
    }

    // From here only the request deadline can cut the exchange.
    clock.headersArrived();
    attempts.push({ replica: replica.id, outcome: { kind: "answered", status: upstream.status }, ms });
    const headers = clientResponseHeaders(upstream.headers);
    headers.set("x-switchyard-replica", replica.id);
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
    const pumped = upstream.body
      .pipeTo(pipe.writable)
      .then(
        (): BodyEnd => "complete",
        (): BodyEnd => {
          // Work out why before aborting: the abort below would blur the cause.
          const end: BodyEnd = input.clientSignal?.aborted
            ? "client_gone"
            : controller.signal.reason instanceof DeadlineExceeded
              ? "deadline"
              : "broken";
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
 * One timer per try instead of two: it fires at the try's header timeout (or the
 * deadline, if sooner); once headers have arrived, a firing only re-arms itself for what
 * is left of the request deadline. Arming and clearing a timer per phase showed in
 * profiles of the hot path.
 */
class TryClock {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #headers = false;

  constructor(
    private readonly controller: AbortController,
    tryStart: number,
    private readonly deadlineAt: number,
    tryTimeoutMs: number,
  ) {
    const budget = Math.min(tryTimeoutMs, deadlineAt - tryStart);
    const deadlineFirst = budget < tryTimeoutMs;
    // The reason is built only if the timer fires: an Error captures a stack, which costs.
    this.#timer = setTimeout(() => this.#fire(deadlineFirst), budget);
  }

  headersArrived(): void {
    this.#headers = true;
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #fire(deadlineFirst: boolean): void {
    const left = this.deadlineAt - Date.now();
    if (!this.#headers) return this.controller.abort(deadlineFirst ? new DeadlineExceeded() : new TryTimeout());
    if (left <= 0) return this.controller.abort(new DeadlineExceeded());
    this.#timer = setTimeout(() => this.#fire(true), left);
  }
}

function errorMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
