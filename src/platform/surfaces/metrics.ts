import { poolSnapshots, shardSnapshots } from "../../app/state/snapshots";
import type { CounterSample, PoolSnapshot } from "../../core/pool/wire";
import { clock } from "../../lib/clock";
import type { BucketReading } from "./limit-buckets";
import { readBuckets } from "./limit-buckets";
import type { Call } from "./route";
import type { RouteWiseLive } from "./routewise-view";
import { routewiseLive } from "./routewise-view";
import type { MetricFamily } from "../../lib/prometheus/render";
import { mergeSamples, PROMETHEUS_CONTENT_TYPE, renderPrometheus } from "../../lib/prometheus/render";
import { GRAPH_DURATION_FAMILY, GRAPH_REQUESTS_FAMILY } from "../../core/graph/graph-counters";
import { graphCountersObjectName } from "../../app/state/object-names";

const CIRCUIT_STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const; // gauge encoding, documented in the HELP line

/**
 * `GET /metrics`: Prometheus text, summed from the Durable Objects that count it, so
 * every isolate's traffic adds up. A state dump, so it needs the admin token.
 */
export async function metrics(call: Call<"required">): Promise<Response> {
  const { env, snapshot } = call;
  const isolate = call.deps.state;
  // This isolate's reports go out first, so a scrape right after traffic counts it.
  await isolate.flush();

  const pools = [...snapshot.poolSpecs.keys()];
  // Graphs with models: only requests to a graph's models are counted (a graph's own path is not a model).
  const countedGraphs = [...new Set(snapshot.graphModels.values())];
  const [poolStates, shards, routewise, limitBuckets, graphs] = await Promise.all([
    poolSnapshots(env, pools),
    shardSnapshots(env),
    Promise.all([...snapshot.routewise.values()].map(async (spec) => [spec.model, await routewiseLive(env, spec)] as const)),
    readBuckets(env, snapshot, {}, clock.now()),
    Promise.all(countedGraphs.map(async (graph) => [graph, await graphCounters(env, graph)] as const)),
  ]);
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
    {
      name: "switchyard_request_duration_seconds_sum",
      help: "Σ seconds from each routed request's arrival to its end (last byte, or the client leaving), by model and pool; ÷ switchyard_requests_total is the mean.",
      type: "counter",
      samples: perPool((p) => (p.durationMs ?? []).map((s) => ({ labels: s.labels, value: s.value / 1000 }))),
    },
    { name: "switchyard_fallbacks_total", help: "Requests that needed more than one attempt, by model and pool.", type: "counter", samples: perPool((p) => p.fallbacks) },
    { name: "routing_affinity_events_total", help: "Session affinity events: hit, miss, created, expired, dropped_error, dropped_unavailable.", type: "counter", samples: mergeSamples(shards.flatMap((s) => s?.events ?? [])) },
    { name: "switchyard_affinity_pins", help: "Pins currently stored across all affinity shards.", type: "gauge", samples: [{ labels: {}, value: shards.reduce((n, s) => n + (s?.pins ?? 0), 0) }] },
    { name: "switchyard_circuit_state", help: "Circuit state per replica: 0 closed, 1 half_open, 2 open.", type: "gauge", samples: replicaGauge((r) => CIRCUIT_STATE_VALUE[r.circuit]) },
    { name: "switchyard_circuit_transitions_total", help: "Circuit transitions per replica, by from and to state.", type: "counter", samples: perPool((p) => p.transitions) },
    { name: "switchyard_inflight", help: "Requests in flight per replica, summed over every isolate that reported within the last 10 s.", type: "gauge", samples: replicaGauge((r) => r.inflight) },
    { name: "switchyard_replica_healthy", help: "Last active health check per replica: 1 healthy, 0 not (absent when never checked).", type: "gauge", samples: replicaGauge((r) => (r.healthy === null ? null : r.healthy ? 1 : 0)) },
    ...graphFamilies(graphs),
    ...routewiseFamilies(routewise),
    ...limitFamilies(limitBuckets),
  ];
  return new Response(renderPrometheus(families), { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
}

/** A graph's counters object, or nothing when it cannot be read now (the scrape goes on without it). */
async function graphCounters(env: Call<"required">["env"], graph: string): Promise<Record<string, CounterSample[]> | null> {
  try {
    return await env.GRAPH_COUNTERS.getByName(graphCountersObjectName(graph)).snapshot();
  } catch (error) {
    console.error(JSON.stringify({ event: "shared_state_unavailable", what: "graph_counters", graph, message: (error as Error)?.message ?? String(error) }));
    return null;
  }
}

/** Requests to graphs' models and their durations, summed by each graph's object. */
function graphFamilies(graphs: ReadonlyArray<readonly [string, Record<string, CounterSample[]> | null]>): MetricFamily[] {
  const of = (family: string, scale = 1) => mergeSamples(graphs.flatMap(([graph, c]) => (c?.[family] ?? []).map((s) => ({ labels: { graph, ...s.labels }, value: s.value * scale }))));
  return [
    { name: "switchyard_graph_requests_total", help: "Requests to a graph's models by graph, model and status sent to the client (a graph called on its own path is not counted).", type: "counter", samples: of(GRAPH_REQUESTS_FAMILY) },
    {
      name: "switchyard_graph_request_duration_seconds_sum",
      help: "Σ seconds from each of those requests' arrival to the graph's answer (a streamed last step's body not included), by graph and model; ÷ switchyard_graph_requests_total is the mean.",
      type: "counter",
      samples: of(GRAPH_DURATION_FAMILY, 1 / 1000),
    },
  ];
}

/** RouteWise's spend, tokens, hedges and quota events, summed by the objects that hold them. */
function routewiseFamilies(models: ReadonlyArray<readonly [string, RouteWiseLive]>): MetricFamily[] {
  const perModel = (family: string) =>
    mergeSamples(models.flatMap(([model, live]) => (live.envelope?.counters[family] ?? []).map((s) => ({ labels: { model, ...s.labels }, value: s.value }))));
  const quotas = new Map<string, NonNullable<ReturnType<RouteWiseLive["quotas"]["get"]>>>();
  for (const [, live] of models) for (const [id, q] of live.quotas) if (q) quotas.set(id, q);
  const slots = new Map<string, { granted: number }>();
  for (const [, live] of models) for (const [id, s] of live.slots) if (s) slots.set(id, s);
  return [
    { name: "switchyard_routewise_spend_total", help: "RouteWise spend by model and route, in the pricing's currency (both legs of a hedge are counted).", type: "counter", samples: perModel("routewise_spend_total") },
    { name: "switchyard_routewise_tokens_total", help: "RouteWise tokens by model, route and kind (prompt, output, cached).", type: "counter", samples: perModel("routewise_tokens_total") },
    { name: "switchyard_routewise_hedges_total", help: "RouteWise latency hedges by model and event (fired, won_by_primary, won_by_hedge).", type: "counter", samples: perModel("routewise_hedges_total") },
    { name: "switchyard_routewise_requests_total", help: "RouteWise answers by model, route and status.", type: "counter", samples: perModel("routewise_requests_total") },
    {
      name: "switchyard_routewise_model_requests_total",
      help: "RouteWise requests by model and status sent to the client, once per request when it ends (the router's own 502/503/504 when every route failed included; a request refused before any route was tried is not counted).",
      type: "counter",
      samples: perModel("routewise_model_requests_total"),
    },
    {
      name: "switchyard_routewise_request_duration_seconds_sum",
      help: "Σ seconds from each RouteWise request's arrival to its end (last byte, the client leaving, or every route failing), by model; ÷ switchyard_routewise_model_requests_total is the mean.",
      type: "counter",
      samples: perModel("routewise_request_duration_ms").map((s) => ({ labels: s.labels, value: s.value / 1000 })),
    },
    {
      name: "switchyard_routewise_discarded_total",
      help: "Numbers RouteWise refused as out of range or not finite, by model, route and what (usage: a provider's usage object, estimated instead; sample: a latency sample from an isolate or storage).",
      type: "counter",
      samples: perModel("routewise_discarded_total"),
    },
    {
      name: "switchyard_routewise_quota_exhaustions_total",
      help: "Times a quota went from usable to exhausted, by quota and reason (used_up, fail_safe: its usage API unreachable past stale_after_s).",
      type: "counter",
      samples: [...quotas].flatMap(([quota, q]) => (["used_up", "fail_safe"] as const).map((reason) => ({ labels: { quota, reason }, value: q.exhaustions[reason] }))),
    },
    { name: "switchyard_routewise_quota_remaining", help: "Units left in each quota as its object counts them (0 when failed safe).", type: "gauge", samples: [...quotas].map(([quota, q]) => ({ labels: { quota, unit: q.unit }, value: q.remaining })) },
    { name: "switchyard_routewise_slots_granted", help: "Concurrency slots held by isolates, per concurrency pool.", type: "gauge", samples: [...slots].map(([pool, s]) => ({ labels: { pool }, value: s.granted })) },
  ];
}

/** The refusal reasons, by the dimension that refused. */
const REFUSAL_REASON = { requests: "requests", tokens: "tokens", spend: "spend", concurrent: "concurrency" } as const;

/**
 * Per limit bucket of the config's rules (a tenant-less bucket for a per-tenant rule: end
 * users are not listed), the counters its PrincipalLimits object stores: labelled by the
 * key's name, the team and the model the bucket's scope names, never by a key, and by
 * `scope`, which fields it names (`key`, `team,model`, `key,per_tenant`…): so a plain and a
 * per-tenant rule on one key are two series, and `sum by (scope)` never adds across scopes.
 */
function limitFamilies(buckets: readonly BucketReading[]): MetricFamily[] {
  const labelsOf = (b: BucketReading) => ({
    scope: scopeLabel(b.scope),
    ...(b.scope.key !== undefined && { key: b.scope.key }),
    ...(b.scope.team !== undefined && { team: b.scope.team }),
    ...(b.scope.model !== undefined && { model: b.scope.model }),
    ...(b.scope.by !== undefined && { key: b.scope.by }), // a per-tenant scope naming no key: the key whose end users it counts
    ...(b.scope.spend_window !== undefined && { spend_window: b.scope.spend_window }), // a second spend window on one scope: its own series
  });
  // A second spend window's bucket counts the same requests and tokens as its scope's own: only its spend is its own series.
  const own = buckets.filter((b) => b.scope.spend_window === undefined);
  const counter = (pick: (b: BucketReading) => number, from: readonly BucketReading[] = own) => mergeSamples(from.map((b) => ({ labels: labelsOf(b), value: pick(b) })));
  return [
    { name: "switchyard_limit_requests_total", help: "Requests charged to each limit bucket (answered or not), by its scope (the fields it names) and the key name, team and model it names.", type: "counter", samples: counter((b) => b.counters.requests) },
    { name: "switchyard_limit_tokens_total", help: "Input + output tokens charged to each limit bucket, by its scope and the key name, team and model it names.", type: "counter", samples: counter((b) => b.counters.tokens) },
    { name: "switchyard_limit_estimated_tokens_total", help: "Of switchyard_limit_tokens_total, the tokens settled from an estimate: the upstream reported no usage, or the answer was cut off.", type: "counter", samples: counter((b) => b.counters.estimatedTokens ?? 0) },
    { name: "switchyard_limit_spend_total", help: "Spend charged to each limit bucket at the model's prices, in the pricing's currency, by its scope and the key name, team and model it names.", type: "counter", samples: counter((b) => b.counters.spend, buckets) },
    {
      name: "switchyard_limit_refusals_total",
      help: "Requests a limit bucket refused with 429, by the scope, key name, team and model of the bucket and reason (requests, tokens, concurrency, spend).",
      type: "counter",
      samples: mergeSamples(buckets.flatMap((b) => (b.scope.spend_window !== undefined ? ["spend" as const] : (Object.keys(REFUSAL_REASON) as (keyof typeof REFUSAL_REASON)[])).map((dim) => ({ labels: { ...labelsOf(b), reason: REFUSAL_REASON[dim] }, value: b.counters.refusals[dim] ?? 0 })))),
    },
  ];
}

/** Which fields a bucket's scope names, in config order: `key`, `team,model`, `key,per_tenant`. */
function scopeLabel(scope: BucketReading["scope"]): string {
  const fields = (["key", "team", "model"] as const).filter((field) => scope[field] !== undefined);
  return [...fields, ...(scope.per_tenant ? ["per_tenant"] : [])].join(",");
}
