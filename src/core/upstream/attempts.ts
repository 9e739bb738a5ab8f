/** What happened on one try against one target, and how it is told when every try failed. */

export type AttemptOutcome =
  | { kind: "answered"; status: number } // handed to the client, or raced as a hedge (2xx, or a status that is not retried)
  | { kind: "retryable_status"; status: number; retryAfterS?: number } // the upstream's Retry-After, when it gave a usable one
  | { kind: "timeout" } // the per-try timeout passed before response headers
  | { kind: "deadline" } // the request's total deadline passed
  | { kind: "connect_error"; message: string }
  | { kind: "client_gone" }
  | { kind: "cancelled" }; // the router stopped it: a hedge's loser, before its headers

/**
 * An answer with a success status. Only such an answer is charged an estimate when its
 * upstream reports no usage; an error answer passed through (a 400, a status not retried)
 * is charged what its usage object says, or nothing, as providers do not bill errors.
 */
export const answeredWithSuccess = (o: AttemptOutcome): boolean => o.kind === "answered" && o.status >= 200 && o.status < 300;

/** How a delivered (or raced) response body ended. `cancelled`: a hedge's loser, stopped by the router. */
export type BodyEnd = "complete" | "client_gone" | "deadline" | "broken" | "cancelled";

export interface Attempt {
  /** The target's id: a replica, a provider route, a graph step's label. */
  replica: string;
  outcome: AttemptOutcome;
  ms: number;
}

export interface FailureReply {
  status: 502 | 503 | 504 | 499;
  code: string;
  message: string;
  /** An overloaded reply's wait: the soonest any tried upstream said it would take traffic again. */
  retryAfterS?: number;
}

const MAX_RETRY_AFTER_S = 3_600; // an upstream's wait passed on; past an hour it is more likely a mistake than advice

/** A Retry-After for a time the router knows (a circuit's reopening, a window's end): whole seconds from `now`, at least 1. */
export const retryAfterUntil = (at: number, now: number): number => Math.max(1, Math.ceil((at - now) / 1000));

/** A Retry-After header (seconds, or an HTTP date) as whole seconds from `now`, or undefined when absent or unusable. */
export function retryAfterSeconds(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  const seconds = /^\d{1,10}$/.test(text) ? Number(text) : Math.ceil((Date.parse(text) - now) / 1000);
  if (!Number.isFinite(seconds) || seconds < 0) return undefined;
  return Math.min(seconds, MAX_RETRY_AFTER_S);
}

/**
 * Why an attempt did not deliver, in words that follow its subject (`replica "b"`, or
 * KServe's `Post "<url>":`). One wording of the facts for every caller.
 */
export function attemptCause(outcome: AttemptOutcome, style: { timeoutMs?: number } = {}): string {
  switch (outcome.kind) {
    case "answered":
    case "retryable_status":
      return `answered ${outcome.status}`;
    case "timeout":
      return style.timeoutMs !== undefined ? `no answer within ${style.timeoutMs} ms` : "did not answer within the per-try timeout";
    case "deadline":
      return "the request deadline passed";
    case "connect_error":
      return style.timeoutMs !== undefined ? outcome.message : `could not be reached (${outcome.message})`;
    case "client_gone":
      return "the client disconnected";
    case "cancelled":
      return "was cancelled: another try answered first";
  }
}

function describe(attempt: Attempt): string {
  const o = attempt.outcome;
  if (o.kind === "client_gone") return "the client disconnected";
  if (o.kind === "deadline") return `the request deadline passed while waiting for replica "${attempt.replica}"`;
  return `replica "${attempt.replica}" ${attemptCause(o)}`;
}

/**
 * The status follows the last cause: waiting too long is 504, an overloaded upstream
 * (429/503) is 503 so clients back off, anything else from upstream is 502.
 */
export function failureReply(model: string, attempts: readonly Attempt[], deadlineHit: boolean, clientGone = false): FailureReply {
  const last = attempts[attempts.length - 1];
  if (!last && clientGone) return { status: 499, code: "client_closed_request", message: `The client disconnected before any replica for model "${model}" was tried` };
  if (!last && deadlineHit) {
    return { status: 504, code: "deadline_exceeded", message: `The request deadline passed before any replica for model "${model}" was tried` };
  }
  // Nothing was tried and nothing ran out: no target could be had (every slot busy, say). Callers that know why say it themselves.
  if (!last) return { status: 503, code: "upstream_unavailable", message: `No replica for model "${model}" could be tried` };
  const tried = `${attempts.length} attempt${attempts.length === 1 ? "" : "s"}`;
  const message = `No replica for model "${model}" succeeded after ${tried}; last: ${describe(last)}${deadlineHit && last.outcome.kind !== "deadline" ? "; the request deadline then passed" : ""}`;
  // A client that left got nothing, whatever the last try was doing then (waiting for a
  // stream's first chunk after its headers, say): the status it "got" is its leaving.
  if (clientGone) return { status: 499, code: "client_closed_request", message };
  // The request's own deadline ending the exchange is told apart from a replica that was slow.
  if (last.outcome.kind === "deadline" || (deadlineHit && last.outcome.kind !== "client_gone")) return { status: 504, code: "deadline_exceeded", message };
  switch (last.outcome.kind) {
    case "client_gone":
      return { status: 499, code: "client_closed_request", message };
    case "timeout":
      return { status: 504, code: "upstream_timeout", message };
    case "connect_error":
      return { status: 502, code: "upstream_unreachable", message };
    case "cancelled":
      return { status: 502, code: "upstream_error", message };
    case "retryable_status":
    case "answered": {
      const overloaded = last.outcome.status === 429 || last.outcome.status === 503 || last.outcome.status === 529;
      if (!overloaded) return { status: 502, code: "upstream_error", message };
      const waits = attempts.flatMap((a) => (a.outcome.kind === "retryable_status" && a.outcome.retryAfterS !== undefined ? [a.outcome.retryAfterS] : []));
      return { status: 503, code: "upstream_unavailable", message, ...(waits.length > 0 && { retryAfterS: Math.max(1, Math.min(...waits)) }) };
    }
  }
}
