import type { Attempt, BodyEnd } from "./attempts";

/** How one attempt went, as far as the replica's health is concerned. */
export type Verdict = "success" | "failure" | "neutral";

export interface AttemptReport {
  replica: string;
  verdict: Verdict;
  /** Upstream status, when one was received. */
  status: number | null;
}

// A redirect too: the router follows none (src/app/engine/engine.ts), so a replica that answers one serves nothing.
const isFailureStatus = (status: number): boolean => status >= 500 || status === 429 || (status >= 300 && status < 400);

/**
 * What an attempt says about its replica's health: it failed (connect error, timeout,
 * 5xx, 429 or a redirect, or a body it broke off), it worked, or it says nothing (the client left,
 * the request's own deadline ran out).
 */
export function verdictOf(attempt: Attempt, bodyEnd: BodyEnd | null, isLast: boolean): Verdict {
  const o = attempt.outcome;
  switch (o.kind) {
    case "answered":
      if (isFailureStatus(o.status)) return "failure";
      if (!isLast || bodyEnd === null || bodyEnd === "complete") return "success";
      return bodyEnd === "broken" ? "failure" : "neutral"; // cut by the client, the request's own deadline, or a hedge
    case "retryable_status":
      return isFailureStatus(o.status) ? "failure" : "success";
    case "timeout":
    case "connect_error":
      return "failure";
    case "deadline":
    case "client_gone":
    case "cancelled":
      return "neutral";
  }
}

export function attemptReports(attempts: readonly Attempt[], bodyEnd: BodyEnd | null): AttemptReport[] {
  return attempts.map((attempt, i) => ({
    replica: attempt.replica,
    verdict: verdictOf(attempt, bodyEnd, i === attempts.length - 1),
    status: "status" in attempt.outcome ? attempt.outcome.status : null,
  }));
}
