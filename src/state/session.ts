import type { Env } from "../env";
import type { ConfigSnapshot } from "../kv/config-source";
import type { RandomSource } from "../routing/random";
import type { ModelRoute, RouteReplica } from "../routing/route-table";
import { weightedOrder } from "../routing/weighted";
import type { Attempt, BodyEnd } from "../upstream/attempts";
import type { AffinityShard } from "../../durable-objects/affinity-shard";
import { poolObjectName } from "../../durable-objects/affinity-shard";
import { affinityKey, shardObjectName, shardOf } from "./affinity-key";
import type { AcquireResult, FinishReport } from "./types";
import { attemptReports } from "./verdict";

const LEASE_GRACE_MS = 60_000; // a lease outlives the request deadline by this much before it counts as lost

export interface RoutingSession {
  /** Fallback order; the first is the choice (pinned, or picked by the pool's policy). */
  candidates: RouteReplica[];
  onAttemptStart(replica: RouteReplica, index: number): void;
  /** Release the lease and report outcomes; `status` is what the client got. Off the response path. */
  settle(attempts: readonly Attempt[], bodyEnd: BodyEnd | null, status: number): void;
}

export interface SessionInput {
  env: Env;
  ctx: ExecutionContext;
  random: RandomSource;
  snapshot: ConfigSnapshot;
  route: ModelRoute;
  request: Request;
  bearer: string | undefined;
  /** Admin override: this replica only. */
  forced: string | null;
}

/**
 * Opens a request's routing with at most one Durable Object round trip: to the
 * client's affinity shard (which consults the pool's object itself), or straight to
 * the pool's object when affinity is off or overridden. If the objects cannot be
 * reached, routing degrades to the config's weights rather than failing the request.
 */
export async function openSession(input: SessionInput): Promise<RoutingSession> {
  const { env, ctx, snapshot, route } = input;
  const routing = snapshot.config.routing;
  const spec = snapshot.poolSpecs.get(route.pool);
  if (!routing.shared_state || !spec) return statelessSession(route, input.random);

  const pool = env.POOL_STATE.getByName(poolObjectName(route.pool));
  const acquire = { spec, pinned: null, forced: input.forced, leaseTtlMs: routing.deadline_ms + LEASE_GRACE_MS };
  const affinityOn = routing.affinity.enabled && env.ROUTING_AFFINITY_ENABLED !== "0" && input.forced === null;

  let result: AcquireResult & { pinned?: string | null };
  let shard: { key: string; stub: DurableObjectStub<AffinityShard> } | null = null;
  try {
    if (affinityOn) {
      const key = await affinityKey(input.request, input.bearer);
      const stub = env.AFFINITY.getByName(shardObjectName(await shardOf(key)));
      shard = { key, stub };
      result = await stub.route({ key, model: route.model, pool: route.pool, ttlMs: routing.affinity.ttl_s * 1000, acquire });
    } else {
      result = await pool.acquire(acquire);
    }
  } catch (error) {
    console.error(JSON.stringify({ event: "shared_state_unavailable", pool: route.pool, message: (error as Error).message }));
    return statelessSession(route, input.random);
  }

  const byId = new Map(route.replicas.map((r) => [r.id, r]));
  const candidates = result.order.flatMap((id) => byId.get(id) ?? []);
  if (candidates.length === 0) return { candidates, onAttemptStart() {}, settle() {} }; // no lease taken, nothing to report
  const pinned = result.pinned ?? null;
  const lease = result.leaseId;
  const probe = result.probe;

  // The report must go out however the request ends. A client that leaves before the
  // response starts can cancel the handler mid-await, so the report is also tied to
  // request.signal, and waitUntil holds the invocation open until it has been sent.
  let settled = false;
  let trying: string | null = null;
  let reported!: () => void;
  ctx.waitUntil(new Promise<void>((resolve) => (reported = resolve)));

  const send = (attempts: FinishReport["attempts"], status: number) => {
    if (settled) return;
    settled = true;
    input.request.signal?.removeEventListener("abort", onClientGone);
    const finish: FinishReport = { leaseId: lease, model: route.model, attempts, status, probe };
    const pinFailed = pinned !== null && attempts.some((r) => r.replica === pinned && r.verdict === "failure");
    // The shard only has work when a pin must drop; otherwise the report goes straight to
    // the pool, one object invocation instead of two.
    const sent =
      shard && pinFailed
        ? shard.stub.finish({ key: shard.key, model: route.model, pool: route.pool, dropPinOf: pinned, finish })
        : pool.finish(finish);
    ctx.waitUntil(sent.catch(logReportFailure).finally(reported));
  };
  const onClientGone = () => send(trying === null ? [] : [{ replica: trying, verdict: "neutral", status: null }], CLIENT_CLOSED_REQUEST);
  input.request.signal?.addEventListener("abort", onClientGone);

  return {
    candidates,
    onAttemptStart(replica, index) {
      trying = replica.id;
      if (index > 0 && lease !== null) ctx.waitUntil(pool.moveLease(lease, replica.id).catch(logReportFailure));
    },
    settle(attempts, bodyEnd, status) {
      send(attemptReports(attempts, bodyEnd), status);
    },
  };
}

const CLIENT_CLOSED_REQUEST = 499; // nginx's status for a client that went away; never sent, only counted

function statelessSession(route: ModelRoute, random: RandomSource): RoutingSession {
  return { candidates: weightedOrder(route.candidates, random), onAttemptStart() {}, settle() {} };
}

function logReportFailure(error: unknown): void {
  console.error(JSON.stringify({ event: "shared_state_report_failed", message: (error as Error)?.message ?? String(error) }));
}
