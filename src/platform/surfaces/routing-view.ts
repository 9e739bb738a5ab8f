import { isFresh } from "../../core/picking/scoring/freshness";
import { readsRequests } from "../../core/picking/policies";
import type { Redactions } from "../../core/config/redact";
import type { StepTarget } from "../../core/graph/compile";
import type { ConfigSnapshot, ConfigState } from "../config-source";
import { clock } from "../../lib/clock";
import type { IsolateState } from "../../app/state/isolate-state";
import { poolSnapshots } from "../../app/state/snapshots";
import type { PoolSnapshot } from "../../core/pool/wire";
import type { Call } from "./route";
import { json } from "./json-response";
import type { SpanExporter } from "../../app/telemetry/exporter";
import { routewiseLive, routewiseModelView } from "./routewise-view";
import { readBuckets } from "./limit-buckets";

/**
 * `GET /routing`: what is serving, where it came from, what was refused, and the effective
 * split; 503 with the same view (why nothing serves) while no config does. Who may read it
 * is the preamble's business (auth rule `public_view`); a caller it let in without the
 * admin token (`routing.public_view: true`) reads the public view.
 */
export async function routingView(call: Call<"optional">): Promise<Response> {
  const { env, state, snapshot } = call;
  const isolate = call.deps.state;
  if (snapshot && !call.admin) return json(await publicView(env, snapshot, isolate));
  const shared = snapshot?.config.routing.shared_state ?? false;
  const limited = (snapshot?.limits.scopes.length ?? 0) > 0; // limits are counted in objects whatever shared_state says
  if (shared || limited) await isolate.flush(); // this isolate's news first, so what it just saw shows
  const [live, routewise, limits] = await Promise.all([
    shared && snapshot ? poolSnapshots(env, [...snapshot.poolSpecs.keys()]) : new Map<string, PoolSnapshot | null>(),
    // RouteWise keeps its state in objects whatever shared_state says: quotas and slots are not optional.
    snapshot ? Promise.all([...snapshot.routewise.values()].map(async (spec) => [spec, await routewiseLive(env, spec)] as const)) : [],
    snapshot && limited ? readBuckets(env, snapshot, {}, clock.now()) : [],
  ]);
  const refreshMs = env.CONFIG_REFRESH_MS;
  return json({
    config: snapshot ? describeSnapshot(snapshot, state) : null,
    rejected: state.rejected
      ? {
          version: state.rejected.version,
          at: new Date(state.rejected.at).toISOString(),
          errors: state.rejected.errors,
          serving: snapshot?.version ?? null,
        }
      : null,
    read_error: state.readError,
    refresh_ms: refreshMs === undefined ? null : Number(refreshMs),
    routing: snapshot?.config.routing ?? null,
    models: snapshot
      ? { ...modelsView(snapshot, live, isolate), ...Object.fromEntries(routewise.map(([spec, state]) => [spec.model, routewiseModelView(snapshot, spec, state, isolate)])) }
      : {},
    graphs: snapshot ? graphsView(snapshot, isolate) : {},
    // Each limit bucket of the rules with its allowance now (docs/limits.md, "Usage"): admin only, as who spends what is no client's business.
    limits: limits.map(({ bucket, scope, usage }) => ({ bucket, scope, usage })),
    telemetry: snapshot ? telemetryView(snapshot, call.deps.exporter) : null,
  }, snapshot ? 200 : 503);
}

/**
 * The public view: each model and how its traffic is shared now (a pool's replicas by
 * weight, a RouteWise model's routes by the decision for a typical request; null for a
 * graph), keyed by replica or route id. Nothing operational: no URLs, prices, budgets,
 * quotas, errors, grants, health or config history. Built field by field, so a field
 * added to the admin view is not shown here by default.
 */
async function publicView(env: Call["env"], snapshot: ConfigSnapshot, isolate: IsolateState) {
  const shown = snapshot.redactions;
  const models: Record<string, { shares: Record<string, number> | null }> = {};
  for (const route of snapshot.routes.values()) {
    models[route.model] = { shares: Object.fromEntries(route.replicas.map((r) => [shown.text(r.id), Number(r.share.toFixed(6))])) };
  }
  const routewise = await Promise.all([...snapshot.routewise.values()].map(async (spec) => [spec, await routewiseLive(env, spec)] as const));
  for (const [spec, live] of routewise) {
    models[spec.model] = { shares: Object.fromEntries(routewiseModelView(snapshot, spec, live, isolate).routes.map((r) => [r.id, r.fraction])) };
  }
  for (const model of snapshot.graphModels.keys()) models[model] = { shares: null };
  return { models };
}

/** Where traces go, as /routing shows URLs (as written, `${VAR}` unresolved), header names only, and this isolate's export counts. */
function telemetryView(snapshot: ConfigSnapshot, exporter: SpanExporter | undefined) {
  const otlp = snapshot.config.telemetry.otlp;
  if (!otlp) return null;
  return {
    otlp: {
      endpoint: snapshot.redactions.url(otlp.endpoint),
      headers: Object.keys(otlp.headers),
      sampling_ratio: otlp.sampling_ratio,
      timeout_ms: otlp.timeout_ms,
      max_queued_spans: otlp.max_queued_spans,
    },
    opted_out: Object.entries(snapshot.config.models).filter(([, m]) => m.telemetry === false).map(([model]) => model),
    opted_out_graphs: Object.entries(snapshot.config.graphs).filter(([, g]) => g.telemetry === false).map(([graph]) => graph),
    isolate: exporter ? { ...exporter.counts, queued: exporter.queued } : null,
  };
}

function describeSnapshot(snapshot: ConfigSnapshot, state: ConfigState) {
  return {
    version: snapshot.version,
    source: snapshot.source,
    loaded_at: new Date(snapshot.loadedAt).toISOString(),
    checked_at: new Date(state.checkedAt).toISOString(),
    client_auth: snapshot.clientKeyDigests.length > 0,
  };
}

/**
 * Config and live state side by side. `state` is null when shared state is off or the
 * pool's object could not be reached.
 */
function modelsView(snapshot: ConfigSnapshot, live: Map<string, PoolSnapshot | null>, isolate: IsolateState) {
  const shown = snapshot.redactions;
  const models: Record<string, unknown> = {};
  for (const route of snapshot.routes.values()) {
    const pool = live.get(route.pool);
    const spec = snapshot.poolSpecs.get(route.pool);
    const now = clock.now();
    models[route.model] = {
      pool: route.pool,
      policy: spec?.policy ?? null,
      upstream_model: route.upstreamModel !== undefined ? shown.text(route.upstreamModel) : null,
      priority: route.priority,
      ttft: ttftView(isolate, route.pool),
      prefix_index: spec && readsRequests(spec.policy) ? prefixIndexView(isolate, route.pool, shown) : null,
      // Requests of the pool waiting in this isolate's fair queue (the pool's `queue`); other isolates keep their own.
      queued_here: isolate.knownPool(route.pool)?.waiting.size ?? 0,
      waited_here: isolate.knownPool(route.pool)?.waiting.counts.joined ?? 0, // requests of this pool that had to wait in this isolate since it started
      lora: route.cacheTarget.adapter === null ? null : { base: shown.text(route.cacheTarget.base), adapter: shown.text(route.cacheTarget.adapter) },
      replicas: route.replicas.map((r) => {
        const state = replicaState(pool, r.id, now, spec?.metrics.staleMs ?? 0);
        return {
          id: shown.text(r.id),
          url: shown.url(r.url),
          labels: r.labels.map((label) => shown.text(label)),
          weight: r.weight,
          share: Number(r.share.toFixed(6)),
          // Would a request be sent there now: weight > 0 and not an open circuit in its cooldown.
          eligible: r.weight > 0 && state?.circuit !== "open",
          api_key: r.api_key ? "(set)" : null,
          state,
        };
      }),
    };
  }
  return models;
}

/** The TTFT model this isolate has fitted for the pool (SLO-aware picking), or null before any answer. */
function ttftView(isolate: IsolateState, pool: string) {
  const model = isolate.knownPool(pool)?.ttftModel;
  if (!model || model.observations === 0) return null;
  const [base, perBlock, perRequest, perQueued] = model.coefficients.map((c) => Number(c.toFixed(3)));
  return { observations: model.observations, base_ms: base, ms_per_uncached_block: perBlock, ms_per_request_in_flight: perRequest, ms_per_request_queued: perQueued };
}

/**
 * This isolate's prefix index for the pool (pools that read requests), or null before its
 * first request: per replica the blocks held and the capacity, with where the capacity came
 * from (`config`, `engine`: its vllm:cache_config_info, `default`); and over the prompts
 * this isolate sent since it started, the blocks it expected the chosen replica to have
 * cached beside the blocks it looked up (their ratio is the router's expected hit rate).
 */
function prefixIndexView(isolate: IsolateState, pool: string, shown: Redactions) {
  const agent = isolate.knownPool(pool);
  if (!agent) return null;
  const held = agent.indexedBlocks();
  const expected = agent.expectedHits;
  return {
    expected_hit_blocks: expected.hitBlocks,
    looked_up_blocks: expected.lookedUpBlocks,
    replicas: Object.fromEntries(
      Object.entries(agent.indexSizes()).map(([id, size]) => [shown.text(id), { blocks: held[id] ?? 0, capacity_blocks: size.blocks, sized_by: size.sizedBy }]),
    ),
  };
}

/** Each graph's nodes and where their steps go; which models reach it. */
function graphsView(snapshot: ConfigSnapshot, isolate: IsolateState) {
  const shown = snapshot.redactions;
  const graphs: Record<string, unknown> = {};
  for (const graph of snapshot.graphs.values()) {
    graphs[graph.name] = {
      path: `/graphs/${graph.name}`,
      // This isolate's last runs, newest first: the route through nodes and steps, as x-switchyard-route gives it.
      recent_runs: isolate.graphRuns.recent(graph.name).map((r) => ({ at: new Date(r.at).toISOString(), route: r.route.map((label) => shown.text(label)), status: r.status })),
      models: [...snapshot.graphModels].filter(([, g]) => g === graph.name).map(([m]) => m),
      nodes: Object.fromEntries(
        [...graph.nodes.values()].map((node) => [
          node.name,
          {
            routerType: node.routerType,
            router: node.router?.type ?? null,
            steps: node.steps.map((s) => ({ step: shown.text(s.label), target: stepTarget(s.target, shown) })),
            mirrors: node.mirrors.map((m) => ({ step: shown.text(m.step.label), percent: m.percent })),
          },
        ]),
      ),
    };
  }
  return graphs;
}

/** Where a step goes, as /routing may show it. */
function stepTarget(target: StepTarget, shown: Redactions): string {
  if (target.kind === "node") return `node:${shown.text(target.node)}`;
  if (target.service.kind === "pool") return `pool:${target.service.pool}${shown.text(target.service.path)}`;
  return shown.url(target.service.url);
}

/** An open circuit past its cooldown admits a probe: it is shown half-open, as the next request finds it. */
function replicaState(pool: PoolSnapshot | null | undefined, id: string, now: number, staleMs: number) {
  if (!pool) return null;
  const r = pool.replicas.find((x) => x.id === id);
  const cooled = r?.circuit === "open" && r.reopenAt !== null && r.reopenAt <= now;
  const scrapedAt = r?.scrapedAt ?? null;
  return {
    circuit: cooled ? "half_open" : (r?.circuit ?? "closed"),
    reopen_at: r?.reopenAt ? new Date(r.reopenAt).toISOString() : null,
    inflight: r?.inflight ?? 0,
    healthy: r?.healthy ?? null,
    checked_at: r?.checkedAt ? new Date(r.checkedAt).toISOString() : null,
    // The last scrape of the replica's own metrics; `stale` ones are not routed on.
    metrics: r?.metrics
      ? {
          waiting: r.metrics.waiting,
          running: r.metrics.running,
          kv_usage: r.metrics.kvUsage,
          lora_running: r.metrics.loraRunning,
          tpot_ms: r.metrics.tpotMs === null ? null : Number(r.metrics.tpotMs.toFixed(3)),
          sampled_at: new Date(r.metrics.sampledAt).toISOString(),
          stale: !isFresh(r.metrics, now, staleMs),
        }
      : null,
    scrape_failures: r?.scrapeFailures ?? 0,
    scrape_error: r?.scrapeError ?? null,
    // ms since a scrape of the replica last succeeded (null: never); a hanging replica's grows while the others' stay under an interval.
    scrape_age_ms: scrapedAt === null ? null : Math.max(0, now - scrapedAt),
  };
}
