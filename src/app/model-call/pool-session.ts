import type { StateBindings as Env } from "../state/bindings";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import type { RandomSource } from "../../lib/random";
import type { ModelRoute, RouteReplica } from "../../core/targets/route-table";
import { weightedOrder } from "../../core/picking/weighted";
import type { Attempt, BodyEnd } from "../../core/upstream/attempts";
import { affinityKey, shardOf } from "../state/affinity-key";
import type { Choice, EmptyCause } from "../../core/pool/choose";
import { clock } from "../../lib/clock";
import type { IsolateState } from "../state/isolate-state";
import { PIN_REVALIDATE_MS, pinSlot, refreshGranularityMs } from "../../core/affinity/pins";
import type { PoolAgent, SloTargets } from "../state/pool-agent";
import type { ShardAgent } from "../state/shard-agent";
import type { Priority } from "../../core/config/schema";
import type { RequestFeatures } from "../../core/picking/scoring/types";
import type { TtftInput } from "../../core/picking/scoring/ttft-model";
import type { Admission, Refusal } from "../../core/pool/admission";
import { admission, criticalLimit, isSaturated } from "../../core/pool/admission";
import type { Place, Probe } from "../state/wait-room";
import { queueTenant } from "./queue-tenant";
import { DEFAULT_CRITICAL_SHARE } from "../../core/config/schema";
import type { AttemptReport, PoolSpec } from "../../core/pool/wire";
import { attemptReports } from "../../core/upstream/verdict";
import type { Span } from "../telemetry/trace";
import { logFields } from "../telemetry/decision";

const PROBE_GRACE_MS = 60_000; // a probe slot outlives the request deadline by this much before the pool frees it

export interface RoutingSession {
  /** Fallback order; the first is the choice (pinned, or picked by the pool's policy). */
  candidates: RouteReplica[];
  /** Why `candidates` is empty, when it is (stateless sessions: every weight 0). */
  empty?: EmptyCause;
  /** With every circuit open: when the first may take a probe (epoch ms). */
  reopensAt?: number;
  /** With objectives: the replicas predicted to meet them all (null: none could be judged; absent: not judged here). */
  sloMeets?: ReadonlySet<string> | null;
  /** The client's pin: found in this isolate's cache (`hit`) or claimed from its shard (`claimed`); absent: none. */
  pin?: "hit" | "claimed";
  /** Set when load shedding refused the request: nothing was leased or sent. */
  refused?: { reason: Refusal; retryAfterS: number };
  onAttemptStart(replica: RouteReplica, index: number): void;
  /** A streamed answer's first chunk, `ms` after its try started; absent when the pool's policy does not learn TTFT. */
  firstChunk?: (replica: string, ms: number) => void;
  /** Before the first try: waits while another request prefills this prompt on the chosen replica (bounded); absent when it need not. */
  warmup?: (signal?: AbortSignal) => Promise<void>;
  /** Run every HEARTBEAT_MS while the request is in flight (by the attempt engine's timer); absent when nothing needs it. */
  heartbeat?: () => void;
  /** Release the lease and report outcomes; `status` is what the client got. Off the response path. */
  settle(attempts: readonly Attempt[], bodyEnd: BodyEnd | null, status: number): void;
}

export interface SessionInput {
  env: Env;
  ctx: ExecutionContext;
  random: RandomSource;
  state: IsolateState;
  snapshot: ConfigSnapshot;
  route: ModelRoute;
  request: Request;
  bearer: string | undefined;
  /** Admin override: this replica only. */
  forced: string | null;
  /** When the request arrived (clock.now()): its duration is reported when it settles. */
  startedAt: number;
  /** False for calls that are not a client's own conversation (graph steps): no pins. */
  affinity: boolean;
  /** What the pool's scoring policy reads of the request (absent: nothing; load-only policies ignore it). */
  features?: RequestFeatures;
  /** Load-shedding class (default standard). */
  priority?: Priority;
  /** The request's latency objectives (`X-SLO-TTFT-Ms`, `X-SLO-TPOT-Ms`). */
  slo?: SloTargets;
  /** The span this call's routing and attempts go under (docs/telemetry.md). */
  trace?: Span;
}

interface HeldPin {
  hit: boolean;
  slot: string;
  key: string;
  replica: string;
  shard: ShardAgent;
}

/**
 * Asks a cold isolate's pool object for its first view now, without waiting for it: a
 * request that first waits for something else (its limits' grant) then finds the view
 * come or coming, instead of starting one wait after the other.
 */
export function prefetchView(input: Pick<SessionInput, "env" | "ctx" | "state" | "snapshot">, route: SessionInput["route"]): void {
  const spec = input.snapshot.poolSpecs.get(route.pool);
  if (!input.snapshot.config.routing.shared_state || !spec) return;
  const agent = input.state.pool(input.env, spec);
  if (!agent.hasView) agent.prefetch(input.ctx);
}

/**
 * Opens a request's routing from this isolate's view of the pool. In steady state —
 * the view fresh, the client's pin cached — nothing here awaits a Durable Object: the
 * choice is local and the report goes out in a later batch. A pin the isolate has not
 * seen costs one awaited call to its shard; a half-open probe costs one to the pool.
 */
export function openSession(input: SessionInput): RoutingSession | Promise<RoutingSession> {
  const spec = input.snapshot.poolSpecs.get(input.route.pool);
  if (!input.snapshot.config.routing.shared_state || !spec) return statelessSession(input.route, input.random);
  return openSharedSession(input, spec);
}

async function openSharedSession(input: SessionInput, spec: PoolSpec): Promise<RoutingSession> {
  const { env, ctx, snapshot, route, state } = input;
  const routing = snapshot.config.routing;

  const agent = state.pool(env, spec);
  if (agent.hasView) agent.refresh(ctx);
  else await agent.coldStart(ctx);

  const priority = input.forced !== null ? "critical" : (input.priority ?? "standard"); // an operator's pin is never shed (still held to the hard cap)
  const retryAfterS = snapshot.config.pools[spec.pool]?.shed_retry_after_s ?? 1;
  const refuse = (reason: Refusal): RoutingSession => ({ candidates: [], refused: { reason, retryAfterS }, onAttemptStart() {}, settle() {} });

  // Waiters that can use a free slot take it before this request does (./wait-room.ts); what is left, it may take.
  if (agent.waiting.size > 0) agent.waiting.offer();
  const first = pick(input, agent, spec, priority);
  let picked = first instanceof Promise ? await first : first; // no await without a pin: leased below before anything else runs
  let place: Place | null = null;
  if (!picked.verdict.admitted && spec.queue.maxWaiting > 0) {
    // Fair queue: wait for a slot instead of a 429 (./wait-room.ts).
    let lastPin = picked.pin?.replica ?? null;
    const tenant = await queueTenant(input.request, input.bearer, snapshot.clientKeyDigests.length > 0);
    place = agent.waiting.join({ tenant, priority, ttlMs: spec.queue.ttlMs, signal: input.request.signal, probe: () => probeNow(input, agent, spec, priority, lastPin) });
    if (!place) return refuse(picked.verdict.reason); // the queue, or this tenant's share of it, is full
    agent.keepFresh(ctx); // other isolates' releases show only in a fresher view
    for (;;) {
      const turn = await place.turn();
      if (turn !== "admitted") {
        place.leave();
        return refuse(picked.verdict.admitted ? "at_capacity" : picked.verdict.reason);
      }
      place.unhold(); // the slot held for it is taken again by its own pick, just below
      try {
        picked = await pick(input, agent, spec, priority);
      } catch (error) {
        place.leave();
        agent.waiting.offer();
        throw error;
      }
      lastPin = picked.pin?.replica ?? null;
      if (input.request.signal?.aborted) {
        place.leave(); // the client left on its turn: nothing is leased, the slot goes on
        agent.waiting.offer();
        return refuse(picked.verdict.admitted ? "at_capacity" : picked.verdict.reason);
      }
      if (picked.verdict.admitted) break;
      if (place.expired()) {
        place.leave();
        agent.waiting.offer();
        return refuse(picked.verdict.reason);
      }
      place.refused();
      agent.keepFresh(ctx); // the next view may show other isolates' releases; asked from this request, whose turn it was
    }
  } else if (!picked.verdict.admitted) {
    return refuse(picked.verdict.reason);
  }

  try {
    let { choice } = picked;
    let probe: string | null = null;
    if (choice.probe) {
      const admitted = await agent.admitProbe(choice.order[0]!, routing.deadline_ms + PROBE_GRACE_MS, clock.now(), ctx);
      if (admitted.admission === "no") choice = { ...choice, order: choice.order.slice(1), probe: false };
      probe = admitted.token;
    }

    const byId = new Map(route.replicas.map((r) => [r.id, r]));
    const candidates = choice.order.flatMap((id) => byId.get(id) ?? []);
    // A refused probe was the only choice: its circuit is open. Ids the route lacks: the policy chose none of the route's replicas.
    if (candidates.length === 0) return { candidates, empty: choice.empty ?? (choice.order.length === 0 ? "circuits_open" : "unpicked"), ...(choice.reopensAt !== undefined && { reopensAt: choice.reopensAt }), onAttemptStart() {}, settle() {} };
    // Leased at once, before anything else runs: the next arrival's admission (or a waiter's probe) sees the slot taken.
    const session = trackedSession(input, agent, candidates, picked.pin, probe, countsAsCritical(input, priority));
    if (choice.sloMeets !== undefined) session.sloMeets = choice.sloMeets;
    if (picked.pin) session.pin = picked.pin.hit ? "hit" : "claimed";
    return session;
  } finally {
    place?.done();
  }
}

/** Whether the request is held to the pool's critical share (an operator's pin is not: only the hard cap holds it). */
const countsAsCritical = (input: SessionInput, priority: Priority) => priority === "critical" && input.forced === null;

/**
 * A waiter's admission, run by whoever frees capacity (./wait-room.ts): the pick from the
 * isolate's view with the pin the waiter's own pick found, no I/O. Admitted, it leases
 * the first replica for the waiter (and counts it critical) and says how to undo that.
 */
function probeNow(input: SessionInput, agent: PoolAgent, spec: PoolSpec, priority: Priority, pin: string | null): ReturnType<Probe> {
  const now = clock.now();
  const choice = agent.choose(pin, input.forced, input.random, now, input.features, input.slo);
  const verdict = verdictOf(input, agent, spec, priority, choice, now);
  const replica = choice.order[0];
  if (!verdict.admitted || replica === undefined) return { admitted: false, classFull: !verdict.admitted && verdict.reason === "critical_share" };
  agent.lease(replica);
  const critical = countsAsCritical(input, priority);
  if (critical) agent.critical(1);
  return {
    admitted: true,
    undo: () => {
      agent.unlease(replica);
      if (critical) agent.critical(-1);
    },
  };
}

interface Picked {
  choice: Choice;
  pin: HeldPin | null;
  verdict: Admission;
}

/**
 * One pick and its admission, from the isolate's view as it is now. Without a pin to
 * claim it returns at once, not a promise: the caller then leases the replica before any
 * other request's code runs, so the next pick of a burst already counts this one.
 */
function pick(input: SessionInput, agent: PoolAgent, spec: PoolSpec, priority: Priority): Picked | Promise<Picked> {
  const routing = input.snapshot.config.routing;
  const now = clock.now();
  const affinityOn = input.affinity && routing.affinity.enabled && input.env.ROUTING_AFFINITY_ENABLED !== "0" && input.forced === null;
  if (affinityOn) return routeWithPin(input, agent, routing.affinity.ttl_s * 1000, now).then(({ choice, pin }) => ({ choice, pin, verdict: verdictOf(input, agent, spec, priority, choice, now) }));
  const choice = agent.choose(null, input.forced, input.random, now, input.features, input.slo);
  return { choice, pin: null, verdict: verdictOf(input, agent, spec, priority, choice, now) };
}

function verdictOf(input: SessionInput, agent: PoolAgent, spec: PoolSpec, priority: Priority, choice: Choice, now: number): Admission {
  const criticalCap = criticalLimit(spec.maxOngoing, agent.routable(now).length, spec.criticalShare ?? DEFAULT_CRITICAL_SHARE);
  return admission({
    priority,
    replicas: choice.order,
    capped: choice.capped ?? false,
    saturated: (id) => isSaturated(agent.metricsOf(id), agent.load(id), now, { ...spec.scoring.saturation, staleMs: spec.scoring.stalenessMs, maxOngoing: spec.maxOngoing }),
    criticalShareFull: countsAsCritical(input, priority) && agent.criticalInflight >= criticalCap,
  });
}

/**
 * The client's pin, from the isolate's cache when it has it (a hit: no call, the TTL
 * slides locally and in the next batch), else claimed from its shard in one awaited
 * call so every isolate agrees on one pin.
 */
async function routeWithPin(input: SessionInput, agent: PoolAgent, ttlMs: number, now: number): Promise<{ choice: Choice; pin: HeldPin | null }> {
  const { route, state, ctx } = input;
  const key = await affinityKey(input.request, input.bearer);
  const slot = pinSlot(key, route.model);
  const cached = state.pins.get(slot);
  const usable = cached && cached.pool === route.pool && cached.expiresAt > now ? cached : undefined;
  let choice = agent.choose(usable?.replica ?? null, null, input.random, now, input.features, input.slo);

  if (usable && choice.pinnedAllowed) {
    const shard = state.shard(input.env, usable.shard);
    shard.hit(route.model, ctx);
    usable.expiresAt = now + ttlMs;
    const slide = now - usable.sentUseAt >= refreshGranularityMs(ttlMs);
    if (slide) usable.sentUseAt = now;
    if (slide || Date.now() - usable.checkedAt >= PIN_REVALIDATE_MS) shard.touch({ key, model: route.model, usedAt: slide ? now : null, ttlMs }, ctx);
    return { choice, pin: { hit: true, slot, key, replica: usable.replica, shard } };
  }

  const proposal = choice.order[0];
  if (proposal === undefined || choice.failedOpen) return { choice, pin: null }; // no real choice to pin
  const shardIndex = cached?.shard ?? (await shardOf(key));
  const shard = state.shard(input.env, shardIndex);
  let claimed;
  try {
    claimed = await shard.claim({ key, model: route.model, pool: route.pool, ttlMs, proposal, allowed: agent.routable(now) }, ctx);
  } catch (error) {
    console.error(JSON.stringify({ event: "shared_state_unavailable", what: "pin_claim", pool: route.pool, message: (error as Error)?.message ?? String(error), ...logFields(input.trace) }));
    return { choice, pin: null }; // route unpinned rather than fail
  }
  state.pins.set(slot, { shard: shardIndex, pool: route.pool, replica: claimed.replica, expiresAt: claimed.expiresAt, sentUseAt: now, checkedAt: Date.now() });
  // Another isolate may have pinned this client first: follow its pin.
  if (claimed.replica !== proposal) choice = agent.choose(claimed.replica, null, input.random, now, input.features, input.slo);
  return { choice, pin: { hit: false, slot, key, replica: claimed.replica, shard } };
}

/**
 * Leases and reports for a routed request. The attempt engine (src/app/engine/engine.ts)
 * calls `settle` exactly once however the request ends, a client leaving before the
 * response starts included (it settles from the abort itself, and holds the invocation
 * open until it has). While the request is in flight the engine runs its `heartbeat`
 * (on the try's own timer), so the isolate's load never expires at the pool's object.
 */
function trackedSession(input: SessionInput, agent: PoolAgent, candidates: RouteReplica[], pin: HeldPin | null, probe: string | null, critical: boolean): RoutingSession {
  const { ctx, route, state } = input;
  let settled = false;
  let trying: string | null = null;
  if (critical) agent.critical(1);

  const send = (attempts: AttemptReport[], status: number) => {
    if (settled) return;
    settled = true;
    gate.warmed?.();
    if (critical) agent.critical(-1);
    if (trying !== null) agent.release(trying, opening);
    // A probe admitted for a request that never reached the replica frees its slot.
    const reports = probe !== null && attempts.length === 0 ? [{ replica: candidates[0]!.id, verdict: "neutral" as const, status: null }] : attempts;
    const at = clock.now();
    agent.finished({ model: route.model, status, attempts: reports, probe, at, durationMs: at - input.startedAt }, ctx);
    if (pin && attempts.some((a) => a.replica === pin.replica && a.verdict === "failure")) {
      state.pins.delete(pin.slot);
      pin.shard.drop({ key: pin.key, model: route.model, replica: pin.replica }, ctx);
    }
  };
  trying = candidates[0]!.id; // the first attempt's move onto it is then a no-op
  const opening = input.features ? agent.openingOf(input.features) : null;
  agent.lease(trying, opening);
  agent.dirty(ctx);
  const gate = input.features ? agent.prefillGate(trying, input.features, opening) : {};

  // What the TTFT model is taught: the picked replica's state when each try was sent.
  const features = input.features;
  const sent = new Map<string, TtftInput>();
  return {
    candidates,
    ...(gate.wait && { warmup: gate.wait }),
    heartbeat: () => agent.heartbeat(ctx),
    firstChunk: features
      ? (replica, ms) => {
          gate.warmed?.(); // the prompt is cached there now: its waiters may go
          const at = sent.get(replica);
          if (at) agent.observeTtft(at, ms);
        }
      : undefined,
    onAttemptStart(replica) {
      if (settled) return;
      if (features) {
        sent.set(replica.id, agent.ttftInput(replica.id, features, { leased: trying === replica.id })); // its own lease may already be counted
      }
      if (trying === null) agent.lease(replica.id, opening);
      else agent.move(trying, replica.id, opening);
      // The replica that gets the prompt will cache its blocks: this isolate's guess, shared with the next batch.
      if (input.features && input.features.hashes.length > 0) agent.routedPrefix({ replica: replica.id, hashes: [...input.features.hashes] });
      trying = replica.id;
      agent.dirty(ctx);
    },
    settle(attempts, bodyEnd, status) {
      send(attemptReports(attempts, bodyEnd), status);
    },
  };
}

function statelessSession(route: ModelRoute, random: RandomSource): RoutingSession {
  return { candidates: weightedOrder(route.candidates, random), onAttemptStart() {}, settle() {} };
}
