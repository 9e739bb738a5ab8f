import type { Env } from "../env";
import type { ConfigSource } from "../kv/config-source";
import type { IsolateState } from "../state/isolate-state";
import { poolSnapshots, shardSnapshots } from "../state/snapshots";
import type { CounterSample, PoolSnapshot } from "../state/types";
import { OPENAI_ERRORS } from "./error-style";
import { openRequest } from "./preamble";
import type { MetricFamily } from "./prometheus";
import { mergeSamples, PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "./prometheus";

const CIRCUIT_STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const; // gauge encoding, documented in the HELP line

/**
 * `GET /metrics`: Prometheus text, summed from the Durable Objects that count it, so
 * every isolate's traffic adds up. A state dump, so it needs the admin token.
 */
export async function metrics(request: Request, env: Env, configSource: ConfigSource, isolate: IsolateState): Promise<Response> {
  const opened = await openRequest(request, env, configSource, OPENAI_ERRORS, { auth: "admin", body: false });
  if (!opened.ok) return opened.response;
  const snapshot = opened.snapshot;
  // This isolate's reports go out first, so a scrape right after traffic counts it.
  await isolate.flush();

  const pools = [...snapshot.poolSpecs.keys()];
  const [poolStates, shards] = await Promise.all([poolSnapshots(env, pools), shardSnapshots(env)]);
  const withPool = (pool: string, samples: CounterSample[]) => samples.map((s) => ({ labels: { pool, ...s.labels }, value: s.value }));
  const perPool = (pick: (p: PoolSnapshot) => CounterSample[]) =>
    mergeSamples([...poolStates].flatMap(([pool, p]) => (p ? withPool(pool, pick(p)) : [])));
  const replicaGauge = (value: (r: PoolSnapshot["replicas"][number]) => number | null) =>
    [...poolStates].flatMap(([pool, p]) =>
      (p?.replicas ?? []).flatMap((r) => {
        const v = value(r);
        return v === null ? [] : [{ labels: { pool, replica: r.id }, value: v }];
      }),
    );

  const families: MetricFamily[] = [
    { name: "switchyard_requests_total", help: "Routed requests by model, pool, serving replica and status sent to the client.", type: "counter", samples: perPool((p) => p.requests) },
    { name: "switchyard_attempts_total", help: "Upstream attempts by pool, replica and verdict (success, failure, neutral).", type: "counter", samples: perPool((p) => p.attempts) },
    { name: "switchyard_fallbacks_total", help: "Requests that needed more than one attempt, by model and pool.", type: "counter", samples: perPool((p) => p.fallbacks) },
    { name: "routing_affinity_events_total", help: "Session affinity events: hit, miss, created, expired, dropped_error, dropped_unavailable.", type: "counter", samples: mergeSamples(shards.flatMap((s) => s?.events ?? [])) },
    { name: "switchyard_affinity_pins", help: "Pins currently stored across all affinity shards.", type: "gauge", samples: [{ labels: {}, value: shards.reduce((n, s) => n + (s?.pins ?? 0), 0) }] },
    { name: "switchyard_circuit_state", help: "Circuit state per replica: 0 closed, 1 half_open, 2 open.", type: "gauge", samples: replicaGauge((r) => CIRCUIT_STATE_VALUE[r.circuit]) },
    { name: "switchyard_circuit_transitions_total", help: "Circuit transitions per replica, by from and to state.", type: "counter", samples: perPool((p) => p.transitions) },
    { name: "switchyard_inflight", help: "Requests in flight per replica, summed over every isolate that reported within the last 10 s.", type: "gauge", samples: replicaGauge((r) => r.inflight) },
    { name: "switchyard_replica_healthy", help: "Last active health check per replica: 1 healthy, 0 not (absent when never checked).", type: "gauge", samples: replicaGauge((r) => (r.healthy === null ? null : r.healthy ? 1 : 0)) },
  ];
  return new Response(renderPrometheus(families), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
}
