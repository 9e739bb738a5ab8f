/**
 * The vocabulary of the one attempt engine (./engine.ts). A plan says where a request may
 * go and how hard to try; observers are told of every attempt's life. Guards (a lease, a
 * concurrency slot, a quota reservation, a prefix insert) and accounts (circuit verdicts,
 * spend, envelope samples) are observers, so whatever ends an attempt — an answer, the
 * client leaving before or after headers, a timeout, the deadline, a refused connection,
 * a broken body, a hedge lost — settles each of them exactly once.
 */
import type { Attempt, BodyEnd } from "../../core/upstream/attempts";
import type { MeteredUsage } from "./usage-meter";

/** One place a try can go, fully resolved: only ever a URL the config names. */
export interface Target {
  /** Names it in attempts, headers and messages (a replica id, a route id, a step label); never a URL. */
  id: string;
  url: string;
  /** Sent as `Authorization: Bearer` (an Anthropic-native target: `x-api-key`), replacing whatever the headers carry. */
  apiKey?: string | undefined;
  /** The target speaks Anthropic's Messages API (absent: chat completions, or the request's own protocol). */
  dialect?: "anthropic";
}

/** A try the plan wants made. Its own observers (guards taken for it) are settled with it, sent or not. */
export interface PlannedTry {
  target: Target;
  body: Uint8Array | string;
  observers?: readonly AttemptObserver[];
}

export interface AttemptInfo {
  target: Target;
  /** 0 for the first try the plan started, then 1, 2, … */
  index: number;
  /** Epoch ms the try was sent. */
  startedAt: number;
}

/** How one attempt ended, told once. */
export interface AttemptEnd {
  attempt: Attempt;
  /** How its body ended, when it answered and was delivered or raced; null otherwise. */
  body: BodyEnd | null;
  /** What its body said it cost (metered plans only), as far as it got. */
  usage: MeteredUsage | null;
  /** Its answer reached the client. */
  won: boolean;
  /** Ms from sending to the first byte (an event stream's first chunk), when it answered. */
  firstByteMs: number | null;
}

export interface AttemptObserver {
  /** The try is about to be sent. */
  started?(a: AttemptInfo): void;
  /** Headers of the observer's own on this try's request (a trace context): `headers` is the try's own copy. */
  stamp?(a: AttemptInfo, headers: Headers): void;
  /** An event stream's first chunk arrived, `ms` after the try was sent. */
  firstChunk?(a: AttemptInfo, ms: number): void;
  /**
   * The delivered answer's first chunk, to read (a trace's `gen_ai.response.model`), never
   * to change. Asking costs the answer its native hand-over: one JavaScript hop for the
   * first chunk, as timing a stream does, so only a recorded trace asks.
   */
  answerStart?(a: AttemptInfo, chunk: Uint8Array): void;
  /** Exactly once per planned try, however it ended (a try never sent ends as client_gone or deadline with ms 0). */
  ended?(a: AttemptInfo, end: AttemptEnd): void;
}

/** What the caller learns when the plan is over, and what plan observers are told once. */
export interface Settled {
  attempts: Attempt[];
  delivered: boolean;
  /** How the delivered body ended; null when nothing was delivered. */
  body: BodyEnd | null;
  deadlineHit: boolean;
  /** The one who asked went away before the plan delivered. */
  clientGone: boolean;
}

export interface PlanObserver extends AttemptObserver {
  /** A hedge was sent: `secondary` races `primary`, which had no first byte in time. */
  hedged?(primary: AttemptInfo, secondary: AttemptInfo): void;
  /** The answer the client gets comes from `winner` (after a hedge, `hedged` is true). */
  delivered?(winner: AttemptInfo, hedged: boolean): void;
  /** Exactly once: the delivered body ended, or no try delivered. */
  settled?(s: Settled): void;
}

export interface TryPolicy {
  /** Each try's time to response headers. */
  tryTimeoutMs: number;
  /** The whole plan: tries, backoffs and the streamed body. */
  deadlineMs: number;
  /** An answer with this status sends the plan on to the next try. */
  retryable(status: number): boolean;
  /**
   * A retryable answer on the last try: true (graph steps, as KServe) delivers it as the
   * answer; false (pools, providers) makes the plan a failure the router words itself.
   */
  deliverLastAnswer: boolean;
  /** Ms to wait before retry n (1-based), or none. */
  backoffMs?: (retry: number) => number;
}

export interface Plan {
  /**
   * The next try, or null when none is left. It may wait (a concurrency slot). Never
   * called once the client has gone or the deadline has passed.
   */
  next(): PlannedTry | null | Promise<PlannedTry | null>;
  /** True while `next` may still give a try (a retryable last answer is delivered only when false). */
  hasMore(): boolean;
  /** The request headers, already filtered by the caller's header policy. */
  headers: Headers;
  policy: TryPolicy;
  /** Read each answer's usage as it passes (every chunk through JavaScript). */
  meter?: boolean;
  /** The router asked for a stream's usage, the client did not: its event stream is passed on without it (usage-meter.ts). */
  hideUsageChunk?: boolean;
  /** Race the next try against this one when it has sent no first byte after this many ms (null: wait). */
  hedgeAfterMs?: (target: Target) => number | null;
  /** Fires when whoever asked goes away (`request.signal`, a cancelled graph branch). */
  signal: AbortSignal | undefined;
  startedAt: number;
  /** Keeps work alive after the response is returned (`ctx.waitUntil`). */
  waitUntil: (promise: Promise<unknown>) => void;
  observers?: readonly PlanObserver[];
  /** Run at least every `everyMs` while a try is in flight: a heartbeat on the engine's own timer. */
  tick?: { everyMs: number; run: () => void };
  /**
   * Rewrites an error answer's text before a client sees it (the config's secrets shown as
   * `${VAR}`): an upstream that echoes the credential it was sent would otherwise hand the
   * operator's key to the client. Only answers of 400 and up, read whole (they are small).
   */
  scrubError?: (text: string) => string;
  /** Headers the winner's response also carries (a route id, the hedge flag). */
  decorate?: (headers: Headers, winner: Target, hedged: boolean) => void;
  /**
   * Fields every log line about this plan carries: the request's `trace_id` (and
   * `span_id`). Plain data, so the engine needs nothing from telemetry (which observes it).
   */
  logFields?: Readonly<Record<string, string>>;
}

export type RunResult =
  | { delivered: true; response: Response; attempts: Attempt[]; winner: Target }
  | { delivered: false; attempts: Attempt[]; deadlineHit: boolean; clientGone: boolean };
