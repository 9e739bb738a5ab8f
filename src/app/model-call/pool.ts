import { clock } from "../../lib/clock";
import { HEARTBEAT_MS } from "../state/pool-agent";
import type { SessionInput } from "./pool-session";
import { openSession } from "./pool-session";
import type { Attempt } from "../../core/upstream/attempts";
import { failureReply, retryAfterUntil } from "../../core/upstream/attempts";
import { runPlan } from "../engine/engine";
import type { PlanObserver } from "../engine/plan";
import { fixedTries } from "../engine/tries";
import type { RoutingSession } from "./pool-session";
import type { EmptyCause } from "../../core/pool/choose";
import type { RouteReplica } from "../../core/targets/route-table";
import { replicaUrl } from "../../core/upstream/url";
import { attemptSpans } from "../telemetry/attempt-spans";
import { decided, logFields } from "../telemetry/decision";
import { poolDecision } from "./trace-facts";
import { scrubbing } from "./scrub";

/** A session's input (src/app/model-call/pool-session.ts: who asks, where to, what the policy reads) and the call's own. */
export interface PoolCall extends SessionInput {
  /** Cancels the call (default: the client's request.signal; a graph branch has its own). */
  signal?: AbortSignal;
  /** The router's fixed path for this call, joined to each replica's URL. */
  apiPath: string;
  body: Uint8Array | string;
  /** Already filtered by the header policy. */
  headers: Headers;
  /** Overrides routing.try_timeout_ms (a graph step's own timeout). */
  tryTimeoutMs?: number;
  /** The request as an Anthropic-native replica (`dialect: anthropic`) takes it; absent: such replicas are not tried. */
  anthropic?: { apiPath: string; body: Uint8Array | string };
  /** More observers of the plan (a limit's settlement, ./limits.ts). */
  observers?: readonly PlanObserver[];
  /** Read every answer's usage as it passes (a limited request). */
  meter?: boolean;
  /** The router asked for the stream's usage chunk and the client did not: it is passed on without it. */
  hideUsageChunk?: boolean;
}

export type PoolOutcome =
  | { ok: true; response: Response; attempts: Attempt[] }
  | { ok: false; status: number; code: string; message: string; attempts: Attempt[]; retryAfterS?: number };

/**
 * A request to a pool: the session picks and orders replicas (shared state: pins,
 * circuits, load), the attempt engine tries them in order, and the session hears how
 * every attempt and the body ended. Used by the model endpoints and by graph steps that
 * target a pool. A failure comes back as status, code and message for the caller to word
 * in its surface's shape; the message names replicas by id, never by URL.
 */
export async function callPool(call: PoolCall): Promise<PoolOutcome> {
  const { route, snapshot, ctx } = call;
  const deciding = Date.now();
  const opened = openSession(call);
  const session = opened instanceof Promise ? await opened : opened; // stateless: no await at all
  decided(call.trace, `route ${route.model}`, deciding, () => poolDecision(call, session));
  if (session.refused) {
    const { reason, retryAfterS } = session.refused;
    const why = reason === "saturated" ? "every replica is saturated" : reason === "critical_share" ? "critical requests hold the pool's critical_share of its slots" : "every replica is at max_ongoing_requests";
    return { ok: false, status: 429, code: "pool_saturated", message: `Pool '${route.pool}' is shedding load for model '${route.model}' (${why}); retry after ${retryAfterS} s`, attempts: [], retryAfterS };
  }
  if (session.candidates.length === 0) {
    const cause = route.candidates.length === 0 ? "drained" : (session.empty ?? "unpicked");
    return {
      ok: false,
      status: 503,
      code: cause === "drained" ? "no_available_replica" : "no_healthy_replica",
      message: `No replica of pool '${route.pool}' can take traffic for model '${route.model}' (${EMPTY_WHY[cause]})`,
      attempts: [],
      // Clients (and the OpenAI and Anthropic SDKs) wait this long instead of retrying into the same open circuits.
      ...(session.reopensAt !== undefined && { retryAfterS: retryAfterUntil(session.reopensAt, clock.now()) }),
    };
  }

  // A prompt being prefilled on the chosen replica by another request: wait for it (bounded), then find it cached.
  if (session.warmup) {
    const waiting = Date.now();
    await session.warmup(call.signal ?? call.request.signal);
    decided(call.trace, "prefill wait", waiting, () => ({ "switchyard.target": session.candidates[0]!.id, "switchyard.prefill_wait_ms": Date.now() - waiting }));
  }

  const routing = snapshot.config.routing;
  const replicas = routing.max_attempts === null ? session.candidates : session.candidates.slice(0, routing.max_attempts);
  const tries = replicas.flatMap((r) => {
    if (r.dialect !== "anthropic") return [{ target: { id: r.id, url: replicaUrl(r, call.apiPath), apiKey: r.api_key }, body: call.body }];
    return call.anthropic ? [{ target: { id: r.id, url: replicaUrl(r, call.anthropic.apiPath), apiKey: r.api_key, dialect: "anthropic" as const }, body: call.anthropic.body }] : [];
  });
  const result = await runPlan({
    ...fixedTries(tries),
    headers: call.headers,
    policy: {
      tryTimeoutMs: call.tryTimeoutMs ?? routing.try_timeout_ms,
      deadlineMs: routing.deadline_ms,
      retryable: (status) => routing.retry_on.includes(status),
      deliverLastAnswer: false,
    },
    signal: call.signal ?? call.request.signal,
    startedAt: call.startedAt,
    logFields: logFields(call.trace),
    waitUntil: (promise) => ctx.waitUntil(promise),
    // While the request is in flight its isolate keeps reporting its load (src/app/state/pool-agent.ts).
    tick: session.heartbeat ? { everyMs: HEARTBEAT_MS, run: session.heartbeat } : undefined,
    observers: [sessionObserver(session, replicas, route.model), ...(call.observers ?? []), ...attemptSpans(call.trace)],
    ...(call.meter && { meter: true, hideUsageChunk: call.hideUsageChunk ?? false }),
    ...scrubbing(snapshot.redactions),
    ...(call.slo && (call.slo.ttftMs !== undefined || call.slo.tpotMs !== undefined) && { decorate: (headers: Headers, winner: { id: string }) => headers.set("x-switchyard-slo", sloVerdict(session.sloMeets, winner.id)) }),
  });
  if (result.delivered) return { ok: true, response: result.response, attempts: result.attempts };

  if (tries.length === 0 && !result.clientGone && !result.deadlineHit) {
    // Every replica the pool could use now speaks Anthropic's Messages, and this request has no Messages form (a graph step, say, or a chat replica drained to weight 0).
    return { ok: false, status: 503, code: "no_available_replica", message: `No replica of pool '${route.pool}' takes this request for model '${route.model}': the replicas it could use speak Anthropic's Messages API, which this request is not translated to`, attempts: result.attempts };
  }
  const reply = failureReply(route.model, result.attempts, result.deadlineHit, result.clientGone);
  // Through the config's redactions: a replica id or an error text may hold a ${VAR} value.
  console.warn(snapshot.redactions.text(JSON.stringify({ event: "upstream_exhausted", model: route.model, status: reply.status, attempts: result.attempts, ...logFields(call.trace) })));
  return { ok: false, status: reply.status, code: reply.code, message: reply.message, attempts: result.attempts, ...(reply.retryAfterS !== undefined && { retryAfterS: reply.retryAfterS }) };
}

/**
 * What the client is told of its objectives (`x-switchyard-slo`): `met` when the replica
 * that answered was predicted to meet every one, `missed` when it was not (objectives are
 * best effort: with none predicted to meet them, the soonest replica still answers), and
 * `unjudged` when no prediction could be made (the TTFT model still learning, metrics
 * stale or unknown, routing without shared state).
 */
function sloVerdict(meets: ReadonlySet<string> | null | undefined, replica: string): "met" | "missed" | "unjudged" {
  if (!meets) return "unjudged";
  return meets.has(replica) ? "met" : "missed";
}

/** Why a session had no replica to try, as the reply words it. */
const EMPTY_WHY: Record<EmptyCause, string> = {
  drained: "every weight is 0",
  circuits_open: "every circuit is open",
  unpicked: "the pool's policy chose none of its replicas",
  unknown_replica: "the pinned replica is not in the pool",
};

/**
 * The session as an observer of its plan: each try moves the request's lease (and, for
 * scoring pools, teaches the TTFT model and the prefix index); the plan's end, however it
 * came, releases the lease and reports every attempt's verdict, once.
 */
function sessionObserver(session: RoutingSession, replicas: readonly RouteReplica[], model: string): PlanObserver {
  const byId = new Map(replicas.map((r) => [r.id, r]));
  return {
    started: (a) => session.onAttemptStart(byId.get(a.target.id)!, a.index),
    firstChunk: session.firstChunk && ((a, ms) => session.firstChunk!(a.target.id, ms)),
    settled: (s) => {
      const last = s.attempts[s.attempts.length - 1];
      const status = s.delivered ? (last?.outcome.kind === "answered" ? last.outcome.status : 200) : failureReply(model, s.attempts, s.deadlineHit, s.clientGone).status;
      session.settle(s.attempts, s.body, status);
    },
  };
}
