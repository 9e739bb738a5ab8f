/**
 * The one attempt engine: every upstream call the router makes — a pool's replicas, a
 * RouteWise model's provider routes and hedges, graph steps, mirrors, external routers,
 * calibration probes — is a plan (./plan.ts) run here. It tries targets in the plan's
 * order until one answers with a status that is not retried; each try gets
 * `tryTimeoutMs` to produce response headers, the whole plan (streamed body included)
 * `deadlineMs`. Retrying happens only before the response is returned, so never after a
 * byte has reached the client, and never after the one who asked has gone.
 *
 * Endings are settled here, once: each try's observers hear `ended` exactly once
 * (sent or not, answered or not, won or lost), and the plan's observers hear `settled`
 * exactly once. When the client goes away, the abort listener settles everything at
 * once — a handler cancelled mid-await runs no continuation, so nothing may wait for
 * one — and a `waitUntil` holds the invocation open until every observer has been told.
 *
 * Bodies. A small fixed-length body (a non-streamed completion, by far the common case)
 * is handed to the client as the upstream's own stream: workerd moves the bytes natively
 * and runs none of the request's JavaScript any more (pumping it cost about 15% of a
 * pass-through Worker's throughput). A streamed body is piped natively through an
 * IdentityTransformStream, its first chunk moved by hand when someone times it. A
 * metered plan (limits, RouteWise, probes) reads such a small fixed-length answer whole,
 * natively, before delivering it, and finds its usage in it; a metered stream passes
 * every chunk through JavaScript for its usage.
 */
import type { Attempt, AttemptOutcome, BodyEnd } from "../../core/upstream/attempts";
import { retryAfterSeconds } from "../../core/upstream/attempts";
import { anthropicHeaders, clientResponseHeaders, withOperatorKey } from "../../core/upstream/headers";
import { scrubbed } from "./error-scrub";
import type { AttemptEnd, AttemptInfo, AttemptObserver, Plan, PlanObserver, PlannedTry, RunResult, Settled, Target } from "./plan";
import { Cancelled, ClientGone, DeadlineExceeded, TryClock, TryTimeout } from "./try-clock";
import type { MeterEnd, MeteredUsage } from "./usage-meter";
import { isEventStream, MeteredBody, usageOfJsonBody } from "./usage-meter";
import { sleep } from "../../lib/sleep";
import { urlCredentials } from "../../lib/url-credentials";
import { readWithin } from "../../lib/bounded-read";

const HANDOVER_MAX_BYTES = 1024 * 1024; // a fixed-length body up to 1 MiB goes to the client unpumped (a completion is a few KB)

export type { Plan, RunResult };

export function runPlan(plan: Plan): Promise<RunResult> {
  return new PlanRun(plan).go();
}

interface LiveTry {
  info: AttemptInfo;
  observers: readonly AttemptObserver[];
  controller: AbortController;
  clock: TryClock;
  /** `ended` has been told. */
  done: boolean;
  /** Response headers arrived: ms after sending, and the status. */
  answered: { ms: number; status: number } | null;
  firstByteMs: number | null;
  tap: MeteredBody | null;
  /** A metered fixed-length answer, read whole before delivery (the other way to meter than a tap). */
  whole: { bytes: ArrayBuffer; usage: MeteredUsage } | null;
  won: boolean;
  /** Stopped by the router (a hedge's loser). */
  cancelled: boolean;
}

type TryResult = { ok: true; live: LiveTry; response: Response } | { ok: false; live: LiveTry };

class PlanRun {
  readonly #plan: Plan;
  readonly #deadlineAt: number;
  readonly #attempts: Attempt[] = [];
  readonly #live = new Set<LiveTry>();
  readonly #planObservers: readonly PlanObserver[];
  #started = 0;
  #deadlineHit = false;
  #gone = false;
  #hedged = false;
  #settled = false;
  #delivered = false;
  /** A `plan.next()` is being awaited (a slot): the invocation is held open until it returns. */
  #asking = false;
  #release!: () => void;

  constructor(plan: Plan) {
    this.#plan = plan;
    this.#planObservers = plan.observers ?? [];
    this.#deadlineAt = plan.startedAt + plan.policy.deadlineMs;
    plan.waitUntil(new Promise<void>((resolve) => (this.#release = resolve)));
    if (plan.signal?.aborted) this.#gone = true;
    else plan.signal?.addEventListener("abort", this.#onGone);
  }

  async go(): Promise<RunResult> {
    try {
      let primary = await this.#startNext();
      while (primary) {
        const hedgeMs = this.#plan.hedgeAfterMs?.(primary.info.target) ?? null;
        const result = hedgeMs === null ? await primary.result : await this.#race(primary, hedgeMs);
        if (result.ok && !result.live.done) return this.#deliver(result.live, result.response);
        primary = await this.#startNext();
      }
      this.#settle(false, null);
      return { delivered: false, attempts: this.#attempts, deadlineHit: this.#deadlineHit || Date.now() >= this.#deadlineAt, clientGone: this.#gone };
    } catch (error) {
      // The router's own failure says nothing about the upstream: its tries end as cancelled (neutral).
      for (const live of [...this.#live]) {
        live.cancelled = true;
        live.controller.abort(new Cancelled());
        if (live.answered) this.#endAnswered(live, "cancelled", seenUsage(live));
        else this.#failed(live, { kind: "cancelled" });
      }
      this.#settle(false, null);
      throw error;
    }
  }

  /** The client went away: every live try is aborted and settled now, and so is the plan. */
  readonly #onGone = (): void => {
    this.#gone = true;
    for (const live of [...this.#live]) {
      live.controller.abort(new ClientGone());
      if (live.answered) this.#endAnswered(live, "client_gone", seenUsage(live));
      else this.#failed(live, { kind: "client_gone" });
    }
    this.#settle(this.#delivered, this.#delivered ? "client_gone" : null);
  };

  /** The next try the plan gives, started; null when the plan, the client or the deadline says stop. */
  async #startNext(): Promise<(LiveTry & { result: Promise<TryResult> }) | null> {
    const plan = this.#plan;
    if (this.#stopped()) return null;
    if (this.#started > 0 && plan.policy.backoffMs) {
      await sleep(Math.min(plan.policy.backoffMs(this.#started), this.#deadlineAt - Date.now()), plan.signal);
      if (this.#stopped()) return null;
    }
    this.#asking = true;
    let planned: PlannedTry | null;
    try {
      planned = await plan.next();
    } finally {
      this.#asking = false;
    }
    if (!planned) {
      this.#maybeRelease();
      return null;
    }
    const observers = [...this.#planObservers, ...(planned.observers ?? [])];
    if (this.#stopped()) {
      // Its guards were taken for nothing: they are settled as an attempt that was never sent.
      const info = { target: planned.target, index: this.#started, startedAt: Date.now() };
      const attempt: Attempt = { replica: planned.target.id, outcome: this.#gone ? { kind: "client_gone" } : { kind: "deadline" }, ms: 0 };
      if (this.#gone) this.#attempts.push(attempt);
      tell(observers, (o) => o.ended?.(info, { attempt, body: null, usage: null, won: false, firstByteMs: null }), this.#plan.logFields);
      this.#maybeRelease();
      return null;
    }
    return this.#start(planned, observers);
  }

  #stopped(): boolean {
    if (this.#gone) return true;
    if (Date.now() >= this.#deadlineAt) {
      this.#deadlineHit = true;
      return true;
    }
    return false;
  }

  #start(planned: PlannedTry, observers: readonly AttemptObserver[]): LiveTry & { result: Promise<TryResult> } {
    const info: AttemptInfo = { target: planned.target, index: this.#started++, startedAt: Date.now() };
    const controller = new AbortController();
    const clock = new TryClock(controller, info.startedAt, this.#deadlineAt, this.#plan.policy.tryTimeoutMs, this.#plan.tick);
    const live = { info, observers, controller, clock, done: false, answered: null, firstByteMs: null, tap: null, whole: null, won: false, cancelled: false } as LiveTry & { result: Promise<TryResult> };
    this.#live.add(live);
    tell(observers, (o) => o.started?.(info), this.#plan.logFields);
    live.result = this.#send(live, planned.body);
    return live;
  }

  async #send(live: LiveTry, body: Uint8Array | string): Promise<TryResult> {
    const plan = this.#plan;
    const { target } = live.info;
    let upstream: Response;
    try {
      const credentials = urlCredentials(target.url);
      const headers = stamped(withKey(plan.headers, target), live, plan.logFields);
      // redirect "manual": a followed Location is a URL the config does not name, and workerd would carry the body and x-api-key there.
      upstream = await fetch(credentials?.url ?? target.url, { method: "POST", headers: credentials ? withUrlCredentials(headers, target, credentials.authorization) : headers, body, signal: live.controller.signal, redirect: "manual" });
    } catch (error) {
      if (!live.done) this.#failed(live, abortOutcome(live.controller, error));
      return { ok: false, live };
    }
    if (live.done) {
      plan.waitUntil(upstream.body?.cancel().catch(() => {}) ?? Promise.resolve());
      return { ok: false, live };
    }
    const ms = Date.now() - live.info.startedAt;
    if (isRedirect(upstream.status) || (plan.policy.retryable(upstream.status) && !(plan.policy.deliverLastAnswer && !plan.hasMore()))) {
      plan.waitUntil(upstream.body?.cancel().catch(() => {}) ?? Promise.resolve());
      const retryAfterS = retryAfterSeconds(upstream.headers.get("retry-after"), Date.now());
      this.#failed(live, { kind: "retryable_status", status: upstream.status, ...(retryAfterS !== undefined && { retryAfterS }) }, ms);
      return { ok: false, live };
    }
    // From here only the deadline (or the router, for a hedge's loser) can cut the try.
    live.clock.headersArrived();
    live.answered = { ms, status: upstream.status };
    live.firstByteMs = ms;
    const eventStream = isEventStream(upstream.headers);
    if (upstream.body && plan.meter && !eventStream && handOver(upstream.headers)) {
      // Read at once by the runtime and handed on as a fixed body: metering it through a
      // JavaScript stream was half of what limits added per request (bench/README.md).
      // A body that breaks here has reached no client yet, so the plan may try on.
      let bytes: ArrayBuffer;
      try {
        bytes = await upstream.arrayBuffer();
      } catch {
        return this.#brokeUnread(live);
      }
      if (live.done) return { ok: false, live };
      live.whole = { bytes, usage: usageOfJsonBody(bytes) };
    } else if (upstream.body && plan.meter && !eventStream) {
      // Chunked or compressed, so no length to hand over by: read whole all the same when it
      // ends within HANDOVER_MAX_BYTES, so the answer's own x-ratelimit headers count its
      // usage; a larger one is metered as it passes.
      let read: Awaited<ReturnType<typeof readWithin>>;
      try {
        read = await readWithin(upstream.body, HANDOVER_MAX_BYTES);
      } catch {
        return this.#brokeUnread(live);
      }
      if (live.done) return { ok: false, live };
      if ("whole" in read) {
        const bytes = read.whole.slice().buffer;
        live.whole = { bytes, usage: usageOfJsonBody(bytes) };
      } else {
        live.tap = new MeteredBody(read.stream, false, (end) => this.#tapEnded(live, end));
      }
    } else if (upstream.body && (plan.meter || plan.hedgeAfterMs)) {
      live.tap = new MeteredBody(upstream.body, eventStream, (end) => this.#tapEnded(live, end), plan.hideUsageChunk && target.dialect !== "anthropic");
      if (eventStream) {
        // A stream's first byte is its first chunk: a hedge race is won by it.
        const chunk = await live.tap.first();
        if (live.done) return { ok: false, live };
        if (!chunk) {
          // Broken (or out of time) before its first chunk: nothing has reached a client, so
          // like a whole body that breaks above it is no answer, and the plan may try on.
          const end = this.#brokenBodyEnd(live);
          live.controller.abort(new ClientGone());
          this.#endAnswered(live, end, live.tap.usage());
          return { ok: false, live };
        }
        live.firstByteMs = Date.now() - live.info.startedAt;
        tell(live.observers, (o) => o.firstChunk?.(live.info, live.firstByteMs!), this.#plan.logFields);
      }
    }
    return { ok: true, live, response: upstream };
  }

  /** A body read whole that broke (or ran out of time) before any of it reached a client: no answer, and the plan may try on. */
  #brokeUnread(live: LiveTry): TryResult {
    if (!live.done) {
      const end = this.#brokenBodyEnd(live);
      live.controller.abort(new ClientGone());
      this.#endAnswered(live, end, null);
    }
    return { ok: false, live };
  }

  /** Waits `delayMs` for the primary's first byte; past it, races the next try against it. */
  async #race(primary: LiveTry & { result: Promise<TryResult> }, delayMs: number): Promise<TryResult> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const fired = new Promise<"hedge">((resolve) => (timer = setTimeout(() => resolve("hedge"), delayMs)));
    const first = await Promise.race([primary.result, fired]);
    if (timer !== undefined) clearTimeout(timer);
    if (first !== "hedge") return first;
    const secondary = await this.#startNext();
    if (!secondary) return primary.result;
    this.#hedged = true;
    tell(this.#planObservers, (o) => o.hedged?.(primary.info, secondary.info), this.#plan.logFields);
    const winner = await firstSuccess(primary.result, secondary.result);
    if (winner.ok) this.#cancel(winner.live === primary ? secondary : primary);
    return winner;
  }

  /** A hedge's loser: its fetch or body stops; what it cost is still told to its observers. */
  #cancel(loser: LiveTry): void {
    if (loser.done) return;
    loser.cancelled = true;
    loser.controller.abort(new Cancelled());
    if (loser.tap) loser.tap.cancel();
    else if (loser.answered) this.#endAnswered(loser, "cancelled", loser.whole?.usage ?? null);
    // Not answered: its fetch rejects with the Cancelled reason and ends it.
  }

  #deliver(live: LiveTry, upstream: Response): RunResult {
    const plan = this.#plan;
    const { target } = live.info;
    live.won = true;
    this.#delivered = true;
    this.#attempts.push({ replica: target.id, outcome: { kind: "answered", status: upstream.status }, ms: live.answered!.ms });
    const headers = clientResponseHeaders(upstream.headers);
    headers.set("x-switchyard-replica", target.id);
    headers.set("x-switchyard-attempts", String(this.#attempts.length));
    plan.decorate?.(headers, target, this.#hedged);
    tell(this.#planObservers, (o) => o.delivered?.(live.info, this.#hedged), this.#plan.logFields);
    const init = { status: upstream.status, statusText: upstream.statusText, headers };
    const scrub = plan.scrubError && upstream.status >= 400 && !isEventStream(upstream.headers) ? plan.scrubError : null;
    const result = (body: ArrayBuffer | ReadableStream<Uint8Array> | null): RunResult => ({ delivered: true, response: new Response(scrub ? scrubbed(body, scrub) : body, init), attempts: this.#attempts, winner: target });

    if (live.tap) return result(live.tap.stream()); // its end settles the plan (#tapEnded)
    const read = live.observers.some((o) => o.answerStart);
    if (live.whole) {
      const bytes = live.whole.bytes;
      if (read) tell(live.observers, (o) => o.answerStart?.(live.info, new Uint8Array(bytes)), this.#plan.logFields);
      this.#endAnswered(live, "complete", live.whole.usage);
      this.#settle(true, "complete");
      return result(bytes);
    }
    if (!upstream.body || (handOver(upstream.headers) && !read)) {
      // Already on its way: counted complete now (a break inside it goes unnoticed by the circuits; the client still sees it).
      this.#endAnswered(live, "complete", null);
      this.#settle(true, "complete");
      return result(upstream.body);
    }
    const pipe = new IdentityTransformStream();
    const timed = isEventStream(upstream.headers) && live.observers.some((o) => o.firstChunk);
    const onFirst = (chunk: Uint8Array) => {
      if (read) tell(live.observers, (o) => o.answerStart?.(live.info, chunk), this.#plan.logFields);
      if (!timed) return;
      live.firstByteMs = Date.now() - live.info.startedAt;
      tell(live.observers, (o) => o.firstChunk?.(live.info, live.firstByteMs!), this.#plan.logFields);
    };
    const pumped = (timed || read ? pumpTimingFirstChunk(upstream.body, pipe.writable, onFirst) : upstream.body.pipeTo(pipe.writable)).then(
      (): BodyEnd => "complete",
      (): BodyEnd => {
        // Work out why before aborting: the abort below would blur the cause.
        const end = this.#brokenBodyEnd(live);
        live.controller.abort(new ClientGone());
        return end;
      },
    );
    plan.waitUntil(
      pumped.then((end) => {
        this.#endAnswered(live, end, null);
        this.#settle(true, end);
      }),
    );
    return result(pipe.readable);
  }

  /** A metered body ended (read to its end, broken off, or cancelled by its reader or the router). */
  #tapEnded(live: LiveTry, end: MeterEnd): void {
    if (live.done) return;
    const body: BodyEnd = end.end === "complete" ? "complete" : live.cancelled ? "cancelled" : end.end === "cancelled" ? "client_gone" : this.#brokenBodyEnd(live);
    if (body !== "complete") live.controller.abort(new ClientGone());
    this.#endAnswered(live, body, end.usage);
    if (live.won) this.#settle(true, body);
  }

  #brokenBodyEnd(live: LiveTry): BodyEnd {
    if (live.cancelled) return "cancelled";
    if (this.#gone || this.#plan.signal?.aborted) return "client_gone";
    return live.controller.signal.reason instanceof DeadlineExceeded ? "deadline" : "broken";
  }

  #failed(live: LiveTry, outcome: AttemptOutcome, ms = Date.now() - live.info.startedAt): void {
    if (live.done) return;
    const attempt: Attempt = { replica: live.info.target.id, outcome, ms };
    this.#attempts.push(attempt);
    if (outcome.kind === "deadline") this.#deadlineHit = true;
    this.#end(live, { attempt, body: null, usage: null, won: false, firstByteMs: null });
  }

  #endAnswered(live: LiveTry, body: BodyEnd, usage: MeteredUsage | null): void {
    if (live.done) return;
    const attempt: Attempt = { replica: live.info.target.id, outcome: { kind: "answered", status: live.answered!.status }, ms: live.answered!.ms };
    if (!live.won) this.#attempts.push(attempt); // a winner was counted when delivered
    this.#end(live, { attempt, body, usage, won: live.won, firstByteMs: live.firstByteMs });
  }

  #end(live: LiveTry, end: AttemptEnd): void {
    live.done = true;
    live.clock.stop();
    this.#live.delete(live);
    tell(live.observers, (o) => o.ended?.(live.info, end), this.#plan.logFields);
    this.#maybeRelease();
  }

  #settle(delivered: boolean, body: BodyEnd | null): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#plan.signal?.removeEventListener("abort", this.#onGone);
    const s: Settled = { attempts: [...this.#attempts], delivered, body, deadlineHit: this.#deadlineHit, clientGone: this.#gone };
    tell(this.#planObservers, (o) => o.settled?.(s), this.#plan.logFields);
    this.#maybeRelease();
  }

  #maybeRelease(): void {
    if (this.#settled && this.#live.size === 0 && !this.#asking) this.#release();
  }
}

/** What a try's body has said it cost so far, metered either way; null when unmetered. */
const seenUsage = (live: LiveTry): MeteredUsage | null => live.tap?.usage() ?? live.whole?.usage ?? null;

/** Observers are told in turn; one that throws is logged (with the plan's trace id) and does not stop the others or the engine. */
function tell<O>(observers: readonly O[], call: (o: O) => void, log: Plan["logFields"]): void {
  for (const o of observers) {
    try {
      call(o);
    } catch (error) {
      console.error(JSON.stringify({ event: "attempt_observer_failed", message: (error as Error)?.message ?? String(error), ...log }));
    }
  }
}

/** The first try to succeed; if both fail, the one that failed last (its attempt ends the story). */
function firstSuccess(a: Promise<TryResult>, b: Promise<TryResult>): Promise<TryResult> {
  return new Promise((resolve) => {
    let failed = 0;
    for (const p of [a, b]) {
      void p.then((result) => {
        if (result.ok && !result.live.done) resolve(result);
        else if (++failed === 2) resolve(result);
      });
    }
  });
}

function abortOutcome(controller: AbortController, error: unknown): AttemptOutcome {
  const reason: unknown = controller.signal.reason;
  if (reason instanceof ClientGone) return { kind: "client_gone" };
  if (reason instanceof DeadlineExceeded) return { kind: "deadline" };
  if (reason instanceof TryTimeout) return { kind: "timeout" };
  if (reason instanceof Cancelled) return { kind: "cancelled" };
  return { kind: "connect_error", message: errorMessage(error) };
}

/**
 * Moves the first chunk by hand to time it (or read it), then hands the rest to the native
 * pipe: one JavaScript hop per request, not one per chunk.
 */
async function pumpTimingFirstChunk(body: ReadableStream<Uint8Array>, sink: WritableStream<Uint8Array>, onFirst: (chunk: Uint8Array) => void): Promise<void> {
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
    onFirst(first.value);
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

/** A redirect is never followed nor handed on (its Location may name anything): the try failed, as a 5xx would. */
const isRedirect = (status: number): boolean => status >= 300 && status < 400;

/** A URL's userinfo as Basic auth when the target has no `api_key` of its own, on a copy: `headers` may be shared by other tries. */
function withUrlCredentials(headers: Headers, target: Target, authorization: string): Headers {
  if (target.apiKey) return headers;
  const own = new Headers(headers);
  own.set("authorization", authorization);
  return own;
}

function withKey(headers: Headers, target: Target): Headers {
  if (target.dialect === "anthropic") return anthropicHeaders(headers, target.apiKey);
  const own = target.apiKey ? withOperatorKey(headers, target.apiKey) : headers;
  // A Messages client's anthropic-version and anthropic-beta speak to Anthropic's API, not to the chat upstream its request was translated for.
  if (!own.has("anthropic-version") && !own.has("anthropic-beta")) return own;
  const out = own === headers ? new Headers(headers) : own;
  out.delete("anthropic-version");
  out.delete("anthropic-beta");
  return out;
}

/** The try's headers with its observers' own (a trace context) on a copy; the shared ones when none stamps. */
function stamped(headers: Headers, live: LiveTry, log: Plan["logFields"]): Headers {
  if (!live.observers.some((o) => o.stamp)) return headers;
  const own = new Headers(headers);
  tell(live.observers, (o) => o.stamp?.(live.info, own), log);
  return own;
}

/** The body has a declared length within HANDOVER_MAX_BYTES and is not re-encoded on the way. */
function handOver(headers: Headers): boolean {
  if (headers.has("content-encoding")) return false;
  const length = Number(headers.get("content-length") ?? NaN);
  return length >= 0 && length <= HANDOVER_MAX_BYTES;
}


/** A fetch error's text, without any URL credential it might quote. */
function errorMessage(error: unknown): string {
  const text = (error instanceof Error ? error.message : String(error)).replace(/\/\/[^/@\s"]*@/g, "//");
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

export type { Target };
