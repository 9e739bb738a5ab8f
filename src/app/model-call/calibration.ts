/**
 * Calibration probes for a RouteWise model: real streamed requests to each route, timed
 * as traffic is. Each probe is a one-try plan for the attempt engine, so it takes the
 * route's concurrency slot, holds and then uses its quota, counts its spend and tokens,
 * and stops when the operator's request goes away, exactly as a client's request would.
 * Its latency sample is returned (the caller seeds the envelope with it), not reported.
 */
import type { ProviderRoute } from "../../core/config/routewise-schema";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import { estimateTokens } from "../../core/routewise/tokens";
import type { RouteSample } from "../../core/routewise/wire";
import { replicaUrl } from "../../core/upstream/url";
import { clock } from "../../lib/clock";
import { runPlan } from "../engine/engine";
import type { AttemptEnd } from "../engine/plan";
import { isEventStream } from "../engine/usage-meter";
import type { StateBindings } from "../state/bindings";
import type { IsolateState } from "../state/isolate-state";
import { routeAccount } from "./route-accounts";
import { routeWiseAgents, SLOT_TICK_MS } from "./provider-set";

const PROBE_TIMEOUT_MS = 60_000; // a provider slower than this to start answering is not calibrated by waiting longer

export interface ProbeOptions {
  probes: number;
  prompt: string;
  maxTokens: number;
}

export interface ProbeContext {
  env: StateBindings;
  ctx: ExecutionContext;
  state: IsolateState;
  /** The operator's request: probes stop when it goes away. */
  signal: AbortSignal | undefined;
  /** The config's routing timeouts: a probe honours them, as any request does (at most PROBE_TIMEOUT_MS). */
  routing: { try_timeout_ms: number; deadline_ms: number };
}

/** One probe at a time per route, routes in parallel: a probe must not queue behind another on the same provider. */
export async function probeRoutes(cx: ProbeContext, spec: RouteWiseSpec, routes: readonly ProviderRoute[], opts: ProbeOptions): Promise<{ samples: RouteSample[]; failures: Record<string, string> }> {
  const samples: RouteSample[] = [];
  const failures: Record<string, string> = {};
  await Promise.all(
    routes.map(async (route) => {
      for (let i = 0; i < opts.probes && !cx.signal?.aborted; i++) {
        const sample = await probe(cx, spec, route, opts);
        if (typeof sample === "string") {
          failures[route.id] = sample;
          return; // a failing route fails every probe: say so once
        }
        samples.push(sample);
      }
    }),
  );
  return { samples, failures };
}

async function probe(cx: ProbeContext, spec: RouteWiseSpec, route: ProviderRoute, opts: ProbeOptions): Promise<RouteSample | string> {
  const agents = routeWiseAgents(cx.env, cx.state, spec);
  const shape = { promptTokens: estimateTokens(opts.prompt.length), maxTokens: opts.maxTokens };
  const slot = agents.slots.get(route.id);
  let ended: AttemptEnd | null = null;
  let busy = false;
  const startedAt = Date.now();
  let given = false;
  const result = await runPlan({
    // The slot is taken here, inside the plan, so the engine settles it however the probe ends (never sent included).
    next: async () => {
      if (given) return null;
      given = true;
      if (slot && !slot.tryTake() && !(await slot.acquire(cx.ctx))) {
        busy = true;
        return null;
      }
      return {
        target: { id: route.id, url: replicaUrl(route, "/v1/chat/completions"), apiKey: route.api_key },
        body: JSON.stringify({ model: route.upstream_model ?? spec.model, messages: [{ role: "user", content: opts.prompt }], max_tokens: opts.maxTokens, stream: true, stream_options: { include_usage: true } }),
        observers: [routeAccount({ route, agents, shape, predictedOutput: opts.maxTokens, slot, keeper: cx.ctx, sample: false }), { ended: (_a, end) => (ended = end) }],
      };
    },
    hasMore: () => !given,
    headers: new Headers({ "content-type": "application/json", accept: "text/event-stream" }),
    policy: { tryTimeoutMs: Math.min(PROBE_TIMEOUT_MS, cx.routing.try_timeout_ms), deadlineMs: Math.min(PROBE_TIMEOUT_MS, cx.routing.deadline_ms), retryable: () => false, deliverLastAnswer: true },
    meter: true,
    // A held slot's grant is renewed while the probe runs, as for traffic.
    tick: slot ? { everyMs: SLOT_TICK_MS, run: () => slot.nudge(cx.ctx) } : undefined,
    signal: cx.signal,
    startedAt,
    waitUntil: (promise) => cx.ctx.waitUntil(promise),
  });
  if (!result.delivered) {
    if (busy) return "every concurrency slot of the route is busy";
    const last = result.attempts[result.attempts.length - 1]?.outcome;
    if (last?.kind === "client_gone") return "the calibration request was cancelled";
    return last?.kind === "timeout" || last?.kind === "deadline" ? "the provider did not answer in time" : "the provider could not be reached";
  }
  const { response } = result;
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    return `the provider answered HTTP ${response.status}`;
  }
  const reader = response.body.getReader();
  try {
    while (!(await reader.read()).done) {
      // drain: the meter reads usage on the way
    }
  } catch {
    // told below, from how the engine saw it end
  }
  const end = ended as AttemptEnd | null;
  if (!end || end.body !== "complete" || !end.usage) return "the provider broke off its answer";
  const totalMs = Date.now() - startedAt;
  const eventStream = isEventStream(response.headers);
  return {
    route: route.id,
    at: clock.now(),
    ttftMs: eventStream ? (end.firstByteMs ?? totalMs) : totalMs,
    totalMs,
    promptTokens: end.usage.promptTokens ?? shape.promptTokens,
    outputTokens: end.usage.outputTokens,
    cachedTokens: end.usage.cachedTokens,
  };
}
