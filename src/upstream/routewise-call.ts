import type { Env } from "../env";
import type { ConfigSnapshot } from "../kv/config-source";
import type { ProviderRoute } from "../config/routewise-schema";
import type { RandomSource } from "../routing/random";
import { actualCost } from "../routing/routewise/cost";
import type { Decision } from "../routing/routewise/decide";
import { decide, hedgeDelayMs, routeOrder } from "../routing/routewise/decide";
import type { Demand, Envelope, QuotaView, RequestShape, RouteInput } from "../routing/routewise/types";
import { clock } from "../state/clock";
import type { IsolateState } from "../state/isolate-state";
import type { ModelAgent } from "../state/routewise/model-agent";
import type { QuotaAgent } from "../state/routewise/quota-agent";
import type { SlotAgent } from "../state/routewise/slot-agent";
import type { RouteWiseSpec } from "../state/routewise/spec";
import type { Attempt } from "./attempts";
import { failureReply } from "./attempts";
import { exchange } from "./exchange";
import type { PoolOutcome } from "./pool-call";
import { upstreamUrl } from "./url";
import type { MeterEnd } from "./usage-meter";
import { MeteredBody } from "./usage-meter";

const SLOT_TICK_MS = 2_000; // a held slot's grant is renewed at least this often while its request runs (grants live 10 s)
const CHARS_PER_TOKEN = 4; // prompt tokens are estimated before the provider counts them

export interface RouteWiseCall {
  env: Env;
  ctx: ExecutionContext;
  random: RandomSource;
  state: IsolateState;
  snapshot: ConfigSnapshot;
  spec: RouteWiseSpec;
  request: Request;
  apiPath: string;
  /** The parsed OpenAI body; each route gets it with its own upstream model name. */
  json: Record<string, unknown>;
  /** The prompt's canonical text (its length estimates prompt tokens). */
  promptChars: number;
  headers: Headers;
  startedAt: number;
}

interface Agents {
  model: ModelAgent;
  quotas: Map<string, QuotaAgent>;
  slots: Map<string, SlotAgent>;
}

type LegResult = { ok: true; leg: Leg; response: Response; body: MeteredBody | null; firstByteMs: number } | { ok: false; leg: Leg; attempts: Attempt[]; deadlineHit: boolean };

interface Leg {
  route: ProviderRoute;
  controller: AbortController;
  startedAt: number;
  done: Promise<LegResult>;
  /** Set once the leg's answer reached the client (the winner); a loser's tokens are counted as spend only. */
  won: boolean;
}

/**
 * A request to a RouteWise model. The isolate's views (envelopes, quotas, slots) feed the
 * decision (src/routing/routewise/decide.ts); the routes are tried in its order, one
 * exchange each, with an optional hedge; what each answer cost is read from its usage as
 * it streams and reported in the next batch. In steady state nothing here awaits an
 * object: only a first request (no view yet) and a slot miss do.
 */
export async function callRouteWise(call: RouteWiseCall): Promise<PoolOutcome> {
  const { spec, ctx } = call;
  const agents = agentsFor(call);
  await Promise.all([agents.model.ready(ctx), ...[...new Set(agents.quotas.values())].map((q) => q.ready(ctx)), ...[...new Set(agents.slots.values())].map((s) => s.ready(ctx))]);

  const uncalibrated = spec.quotaBearing ? missingCalibration(spec, agents.model) : [];
  if (uncalibrated.length > 0) {
    return {
      ok: false,
      status: 503,
      code: "routewise_uncalibrated",
      message: `Model '${spec.model}' is not calibrated: it has quota routes, and ${uncalibrated.join(", ")} ${uncalibrated.length === 1 ? "has" : "have"} fewer than envelope_min_samples (${spec.params.envelope_min_samples}) latency samples. Seed them with \`switchyard calibrate\` or POST /admin/routewise/${spec.model}/calibrate`,
      attempts: [],
    };
  }

  const shape = requestShape(call);
  const decision = decideNow(spec, agentViews(agents), shape);
  for (const r of decision.routes) {
    if (r.why === "quota_exhausted") {
      const quota = agents.quotas.get(r.id);
      quota?.short();
      quota?.nudge(ctx);
    }
  }
  const order = routeOrder(decision, call.random);
  if (order.length === 0) {
    const why = decision.routes.map((r) => `${r.id} (${r.why ?? "not chosen"})`).join(", ");
    return { ok: false, status: 503, code: "no_feasible_route", message: `No route of model '${spec.model}' can take this request now: ${why}`, attempts: [] };
  }
  agents.model.routed();
  return new Run(call, agents, shape, order).go();
}

function agentsFor(call: RouteWiseCall): Agents {
  const { env, spec, state } = call;
  const quotas = new Map<string, QuotaAgent>();
  const slots = new Map<string, SlotAgent>();
  for (const [route, q] of spec.quotas) quotas.set(route, state.quota(env, q));
  for (const [route, s] of spec.slots) slots.set(route, state.slots(env, s.id, s.limit));
  return { model: state.routewise(env, spec.model, spec.settings), quotas, slots };
}

/** Routes short of envelope_min_samples, with their counts, for the 503's message. */
export function missingCalibration(spec: RouteWiseSpec, model: Pick<ModelAgent, "envelope">): string[] {
  return spec.routes.flatMap((r) => {
    const n = model.envelope(r.id)?.samples ?? 0;
    return n < spec.params.envelope_min_samples ? [`route '${r.id}' (${n})`] : [];
  });
}

/** What a decision reads of the shared state: this isolate's views, or (for /routing) the objects' own answers. */
export interface RouteViews {
  envelope(route: string): Envelope | null;
  quota(route: string, now: number): QuotaView | undefined;
  slots(route: string): { free: number; limit: number } | undefined;
  healthy(route: string, now: number): boolean;
  demand: Demand;
}

export function agentViews(agents: Agents): RouteViews {
  return {
    envelope: (route) => agents.model.envelope(route),
    quota: (route, now) => agents.quotas.get(route)?.quota(now),
    slots: (route) => {
      const slot = agents.slots.get(route);
      return slot && { free: slot.free, limit: slot.limit };
    },
    healthy: (route, now) => agents.model.healthy(route, now),
    demand: agents.model.demand,
  };
}

/** The decision from views as they are now. */
export function decideNow(spec: RouteWiseSpec, views: RouteViews, shape: RequestShape): Decision {
  const now = clock.now();
  const routes: RouteInput[] = spec.routes.map((r) => {
    const quota = views.quota(r.id, now);
    const slots = views.slots(r.id);
    return {
      id: r.id,
      type: r.provider_type,
      pricing: r.pricing,
      envelope: views.envelope(r.id),
      ...(quota && { quota }),
      ...(slots && { slots }),
      healthy: views.healthy(r.id, now),
    };
  });
  return decide({ routes, params: spec.params, request: shape, demand: views.demand });
}

function requestShape(call: RouteWiseCall): RequestShape {
  const max = call.json.max_completion_tokens ?? call.json.max_tokens;
  return { promptTokens: Math.ceil(call.promptChars / CHARS_PER_TOKEN), maxTokens: typeof max === "number" && Number.isInteger(max) && max > 0 ? max : null };
}

/** One request's tries: legs in the decision's order, the hedge, and the accounts. */
class Run {
  readonly #byId: Map<string, ProviderRoute>;
  #next = 0;
  #attempts: Attempt[] = [];
  #deadlineHit = false;
  #hedged = false;

  constructor(
    private readonly call: RouteWiseCall,
    private readonly agents: Agents,
    private readonly shape: RequestShape,
    private readonly order: string[],
  ) {
    this.#byId = new Map(call.spec.routes.map((r) => [r.id, r]));
  }

  async go(): Promise<PoolOutcome> {
    const { spec } = this.call;
    let primary = await this.#nextLeg();
    while (primary) {
      const delay = spec.params.latency_hedge_mode === "off" ? null : hedgeDelayMs(spec.params, this.agents.model.envelope(primary.route.id));
      const result = delay === null ? await primary.done : await this.#race(primary, delay);
      if (result.ok) return this.#deliver(result);
      this.#fail(result);
      primary = await this.#nextLeg();
    }
    const reply = failureReply(spec.model, this.#attempts, this.#deadlineHit);
    return { ok: false, status: reply.status, code: reply.code, message: reply.message, attempts: this.#attempts };
  }

  /** Waits `delay` for the primary's first byte; past it, races the next route against it. */
  async #race(primary: Leg, delayMs: number): Promise<LegResult> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const fired = new Promise<"hedge">((resolve) => (timer = setTimeout(() => resolve("hedge"), delayMs)));
    const first = await Promise.race([primary.done, fired]);
    if (timer !== undefined) clearTimeout(timer);
    if (first !== "hedge") return first;
    const secondary = await this.#nextLeg();
    if (!secondary) return primary.done;
    this.#hedged = true;
    this.agents.model.hedge("fired");
    const winner = await firstSuccess(primary, secondary);
    const loser = winner.leg === primary ? secondary : primary;
    if (winner.ok) {
      this.agents.model.hedge(winner.leg === primary ? "won_by_primary" : "won_by_hedge");
      loser.controller.abort(); // its fetch or body stops; what it cost is still counted
      this.call.ctx.waitUntil(loser.done.then((r) => (r.ok ? r.body?.cancel() : this.#fail(r))));
      return winner;
    }
    // Both failed: the later one's attempts join the earlier's.
    const other = await loser.done;
    if (!other.ok) this.#fail(other);
    return winner;
  }

  /** The next route in order that can be sent to now: a concurrency route needs a slot first. */
  async #nextLeg(): Promise<Leg | null> {
    while (this.#next < this.order.length) {
      const route = this.#byId.get(this.order[this.#next++]!)!;
      const slot = this.agents.slots.get(route.id);
      if (slot && !slot.tryTake() && !(await slot.acquire(this.call.ctx))) continue; // every slot busy: the next route
      return this.#start(route, slot);
    }
    return null;
  }

  #start(route: ProviderRoute, slot: SlotAgent | undefined): Leg {
    const { call } = this;
    const controller = new AbortController();
    const signal = call.request.signal ? AbortSignal.any([call.request.signal, controller.signal]) : controller.signal;
    const routing = call.snapshot.config.routing;
    const body = JSON.stringify({ ...call.json, model: route.upstream_model ?? call.spec.model });
    const leg: Leg = { route, controller, startedAt: Date.now(), won: false, done: null! };
    let released = false;
    const releaseSlot = () => {
      if (released || !slot) return;
      released = true;
      slot.release(call.ctx);
    };
    leg.done = exchange({
      targets: [{ id: route.id, url: upstreamUrl(route.url, call.apiPath), apiKey: route.api_key }],
      headers: call.headers,
      body,
      policy: { tryTimeoutMs: routing.try_timeout_ms, deadlineMs: routing.deadline_ms, retryable: (status) => routing.retry_on.includes(status), deliverLastAnswer: false },
      signal,
      startedAt: call.startedAt,
      waitUntil: (promise) => call.ctx.waitUntil(promise),
      tick: slot ? { everyMs: SLOT_TICK_MS, run: () => slot.nudge(call.ctx) } : undefined,
    }).then(async (result): Promise<LegResult> => {
      if (!result.delivered) {
        releaseSlot();
        return { ok: false, leg, attempts: result.attempts, deadlineHit: result.deadlineHit };
      }
      const response = result.response;
      const status = response.status;
      const eventStream = (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
      let firstByteMs = Date.now() - leg.startedAt;
      const onEnd = (end: MeterEnd) => {
        releaseSlot();
        this.#account(leg, status, firstByteMs, end);
      };
      if (!response.body) {
        onEnd({ usage: { promptTokens: null, outputTokens: 0, cachedTokens: 0, reported: false }, end: "complete" });
        return { ok: true, leg, response, body: null, firstByteMs };
      }
      const metered = new MeteredBody(response.body, eventStream, onEnd);
      // A non-streamed answer's first byte comes with its headers; a stream's is its first chunk.
      if (eventStream) {
        await metered.first();
        firstByteMs = Date.now() - leg.startedAt;
      }
      return { ok: true, leg, response, body: metered, firstByteMs };
    });
    return leg;
  }

  #deliver(result: Extract<LegResult, { ok: true }>): PoolOutcome {
    const leg = result.leg;
    leg.won = true;
    this.agents.model.outcome(leg.route.id, result.response.status < 500, clock.now());
    const headers = new Headers(result.response.headers);
    const attempts = [...this.#attempts, { replica: leg.route.id, outcome: { kind: "answered" as const, status: result.response.status }, ms: result.firstByteMs }];
    headers.set("x-switchyard-route", leg.route.id);
    headers.set("x-switchyard-attempts", String(attempts.length));
    if (this.#hedged) headers.set("x-switchyard-hedge", "fired");
    const response = new Response(result.body ? result.body.stream() : null, { status: result.response.status, statusText: result.response.statusText, headers });
    return { ok: true, response, attempts };
  }

  #fail(result: Extract<LegResult, { ok: false }>): void {
    this.#attempts.push(...result.attempts);
    this.#deadlineHit ||= result.deadlineHit;
    const last = result.attempts[result.attempts.length - 1];
    if (last && last.outcome.kind !== "client_gone" && !result.leg.controller.signal.aborted) this.agents.model.outcome(result.leg.route.id, false, clock.now());
    // A hedge's loser aborted before its headers was still sent: its prompt is billed.
    if (result.leg.controller.signal.aborted) this.#charge(result.leg, null, { promptTokens: this.shape.promptTokens, outputTokens: 0, cachedTokens: 0 });
  }

  /** What an answer cost, once its body has ended: a latency sample for the winner, spend for both. */
  #account(leg: Leg, status: number, firstByteMs: number, end: MeterEnd): void {
    const usage = end.usage;
    const tokens = { promptTokens: usage.promptTokens ?? this.shape.promptTokens, outputTokens: usage.outputTokens, cachedTokens: usage.cachedTokens };
    const served = leg.won && end.end === "complete" && status < 400;
    if (served) {
      const at = clock.now();
      const spend = actualCost(leg.route.pricing, leg.route.provider_type, tokens);
      this.agents.model.served({ route: leg.route.id, at, ttftMs: firstByteMs, totalMs: Date.now() - leg.startedAt, ...tokens }, spend, status);
      this.#useQuota(leg.route, tokens);
      return;
    }
    this.#charge(leg, leg.won ? status : null, tokens);
  }

  #charge(leg: Leg, status: number | null, tokens: { promptTokens: number; outputTokens: number; cachedTokens: number }): void {
    this.agents.model.count(leg.route.id, status, actualCost(leg.route.pricing, leg.route.provider_type, tokens), tokens);
    this.#useQuota(leg.route, tokens);
    this.agents.model.nudge(this.call.ctx);
  }

  #useQuota(route: ProviderRoute, tokens: { promptTokens: number; outputTokens: number }): void {
    const quota = this.agents.quotas.get(route.id);
    if (quota) {
      quota.used(quota.spec.unit === "requests" ? 1 : tokens.promptTokens + tokens.outputTokens);
      quota.nudge(this.call.ctx);
    }
    this.agents.model.nudge(this.call.ctx);
  }
}

/** The first leg to succeed; if both fail, the one that failed last (its attempts end the story). */
function firstSuccess(a: Leg, b: Leg): Promise<LegResult> {
  return new Promise((resolve) => {
    let failed: LegResult | null = null;
    for (const leg of [a, b]) {
      void leg.done.then((result) => {
        if (result.ok) resolve(result);
        else if (failed) resolve(failed);
        else failed = result;
      });
    }
  });
}
