/** What happened on one try against one replica, and what the client is told when every try failed. */

export type AttemptOutcome =
  | { kind: "answered"; status: number } // handed to the client (2xx, or a status that is not retried)
  | { kind: "retryable_status"; status: number }
  | { kind: "timeout" } // the per-try timeout passed before response headers
  | { kind: "deadline" } // the request's total deadline passed
  | { kind: "connect_error"; message: string }
  | { kind: "client_gone" };

/** How a delivered response body ended: fully, the client left, the deadline cut it, or the upstream broke it off. */
export type BodyEnd = "complete" | "client_gone" | "deadline" | "broken";

export interface Attempt {
  replica: string;
  outcome: AttemptOutcome;
  ms: number;
}

export interface FailureReply {
  status: 502 | 503 | 504 | 499;
  code: string;
  message: string;
}

function describe(attempt: Attempt): string {
  const o = attempt.outcome;
  switch (o.kind) {
    case "answered":
    case "retryable_status":
      return `replica "${attempt.replica}" answered ${o.status}`;
    case "timeout":
      return `replica "${attempt.replica}" did not answer within the per-try timeout`;
    case "deadline":
      return `the request deadline passed while waiting for replica "${attempt.replica}"`;
    case "connect_error":
      return `replica "${attempt.replica}" could not be reached (${o.message})`;
    case "client_gone":
      return "the client disconnected";
  }
}

/**
 * The status follows the last cause: waiting too long is 504, an overloaded upstream
 * (429/503) is 503 so clients back off, anything else from upstream is 502.
 */
export function failureReply(model: string, attempts: readonly Attempt[], deadlineHit: boolean): FailureReply {
  const last = attempts[attempts.length - 1];
  if (!last) {
    return { status: 504, code: "deadline_exceeded", message: `The request deadline passed before any replica for model "${model}" was tried` };
  }
  const tried = `${attempts.length} attempt${attempts.length === 1 ? "" : "s"}`;
  const message = `No replica for model "${model}" succeeded after ${tried}; last: ${describe(last)}${deadlineHit && last.outcome.kind !== "deadline" ? "; the request deadline then passed" : ""}`;
  // The request's own deadline ending the exchange is told apart from a replica that was slow.
  if (last.outcome.kind === "deadline" || (deadlineHit && last.outcome.kind !== "client_gone")) return { status: 504, code: "deadline_exceeded", message };
  switch (last.outcome.kind) {
    case "client_gone":
      return { status: 499, code: "client_closed_request", message };
    case "timeout":
      return { status: 504, code: "upstream_timeout", message };
    case "connect_error":
      return { status: 502, code: "upstream_unreachable", message };
    case "retryable_status":
    case "answered": {
      const overloaded = last.outcome.status === 429 || last.outcome.status === 503;
      return overloaded ? { status: 503, code: "upstream_unavailable", message } : { status: 502, code: "upstream_error", message };
    }
  }
}
