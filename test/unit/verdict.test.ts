import { describe, expect, it } from "vitest";
import { attemptReports, verdictOf } from "../../src/core/upstream/verdict";
import type { Attempt } from "../../src/core/upstream/attempts";

const attempt = (outcome: Attempt["outcome"]): Attempt => ({ replica: "r", outcome, ms: 1 });

describe("verdictOf: what an attempt says about its replica", () => {
  it("counts connect errors, timeouts, 5xx and 429 as failures", () => {
    expect(verdictOf(attempt({ kind: "connect_error", message: "refused" }), null, true)).toBe("failure");
    expect(verdictOf(attempt({ kind: "timeout" }), null, true)).toBe("failure");
    expect(verdictOf(attempt({ kind: "retryable_status", status: 503 }), null, false)).toBe("failure");
    expect(verdictOf(attempt({ kind: "retryable_status", status: 429 }), null, false)).toBe("failure");
    expect(verdictOf(attempt({ kind: "answered", status: 501 }), "complete", true)).toBe("failure");
  });

  it("counts a model's own 4xx answer as success: the replica works", () => {
    expect(verdictOf(attempt({ kind: "answered", status: 400 }), "complete", true)).toBe("success");
    expect(verdictOf(attempt({ kind: "retryable_status", status: 404 }), null, false)).toBe("success");
  });

  it("judges the delivered body: broken off by upstream is a failure; cut by the client or the deadline says nothing", () => {
    const ok = attempt({ kind: "answered", status: 200 });
    expect(verdictOf(ok, "complete", true)).toBe("success");
    expect(verdictOf(ok, "broken", true)).toBe("failure");
    expect(verdictOf(ok, "client_gone", true)).toBe("neutral");
    expect(verdictOf(ok, "deadline", true)).toBe("neutral");
  });

  it("says nothing about a replica when the client left or the deadline passed before it answered", () => {
    expect(verdictOf(attempt({ kind: "client_gone" }), null, true)).toBe("neutral");
    expect(verdictOf(attempt({ kind: "deadline" }), null, true)).toBe("neutral");
  });

  it("reports every attempt with its status", () => {
    const reports = attemptReports([attempt({ kind: "retryable_status", status: 502 }), attempt({ kind: "answered", status: 200 })], "complete");
    expect(reports).toEqual([
      { replica: "r", verdict: "failure", status: 502 },
      { replica: "r", verdict: "success", status: 200 },
    ]);
  });
});
