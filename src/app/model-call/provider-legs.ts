/**
 * One RouteWise request's tries. Each route is a leg: one exchange with one target, the
 * route's slot held while it runs. Legs go in the decision's order; with hedging, a leg
 * that has sent no first byte by the hedge delay is raced against the next one, and the
 * loser is aborted. Every answer's usage is metered as it streams: the winner's becomes a
 * latency sample and spend, a loser's spend only.
 */
import type { ProviderRoute } from "../../core/config/routewise-schema";
import type { RouteWiseSpec } from "../../core/routewise/spec";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import type { RandomSource } from "../../lib/random";
import type { StateBindings as Env } from "../state/bindings";
import type { IsolateState } from "../state/isolate-state";
import { actualCost } from "../../core/routewise/cost";
import { hedgeDelayMs } from "../../core/routewise/decide";
import type { RequestShape } from "../../core/routewise/types";
import { clock } from "../../lib/clock";
import type { SlotAgent } from "../state/routewise/slot-agent";
import type { RouteWiseAgents } from "../state/routewise/views";
import type { Attempt } from "../../core/upstream/attempts";
import { failureReply } from "../../core/upstream/attempts";
import { exchange } from "../engine/exchange";
import type { PoolOutcome } from "./pool";
import { replicaUrl } from "../../core/upstream/url";
import type { MeterEnd } from "../engine/usage-meter";
import { MeteredBody } from "../engine/usage-meter";

/** A request to a RouteWise model, as its legs need it (./provider-set.ts decides, this runs). */
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

const SLOT_TICK_MS = 2_000; // a held slot's grant is renewed at least this often while its request runs (grants live 10 s)

type LegResult =
  /** `settle`: for an answer without a body, its accounts, run once it is known whether the leg won. */
  | { ok: true; leg: Leg; response: Response; body: MeteredBody | null; firstByteMs: number; settle?: () => void }
  | { ok: false; leg: Leg; attempts: Attempt[]; deadlineHit: boolean };

interface Leg {
  route: ProviderRoute;
  controller: AbortController;
  startedAt: number;
  done: Promise<LegResult>;
  /** Set once the leg's answer reached the client (the winner); a loser's tokens are counted as spend only. */
  won: boolean;
  /** Quota units held for the leg while it runs (its predicted use); given back when its real use is known. */
  reserved: number;
}

/** One request's tries: legs in the decision's order, the hedge, and the accounts. */
export class Run {
  readonly #byId: Map<string, ProviderRoute>;
  #next = 0;
  #attempts: Attempt[] = [];
  #deadlineHit = false;
  #hedged = false;

  constructor(
    private readonly call: RouteWiseCall,
    private readonly agents: RouteWiseAgents,
    private readonly shape: RequestShape,
    private readonly order: string[],
    /** Predicted output tokens per route, from the decision: what a quota leg reserves. */
    private readonly outputTokens: ReadonlyMap<string, number>,
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
      this.call.ctx.waitUntil(loser.done.then((r) => (r.ok ? (r.body ? r.body.cancel() : r.settle?.()) : this.#fail(r))));
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
    const leg: Leg = { route, controller, startedAt: Date.now(), won: false, reserved: 0, done: null! };
    const quota = this.agents.quotas.get(route.id);
    if (quota) {
      // Held now, so requests deciding while this one runs see the quota it will use.
      leg.reserved = quota.spec.unit === "requests" ? 1 : this.shape.promptTokens + (this.outputTokens.get(route.id) ?? 0);
      quota.reserve(leg.reserved);
    }
    let released = false;
    const releaseSlot = () => {
      if (released || !slot) return;
      released = true;
      slot.release(call.ctx);
    };
    leg.done = exchange({
      targets: [{ id: route.id, url: replicaUrl(route, call.apiPath), apiKey: route.api_key }],
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
        const settle = () => onEnd({ usage: { promptTokens: null, outputTokens: 0, cachedTokens: 0, reported: false }, end: "complete" });
        return { ok: true, leg, response, body: null, firstByteMs, settle };
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
    result.settle?.();
    return { ok: true, response, attempts };
  }

  #fail(result: Extract<LegResult, { ok: false }>): void {
    this.#attempts.push(...result.attempts);
    this.#deadlineHit ||= result.deadlineHit;
    const last = result.attempts[result.attempts.length - 1];
    if (last && last.outcome.kind !== "client_gone" && !result.leg.controller.signal.aborted) this.agents.model.outcome(result.leg.route.id, false, clock.now());
    // A hedge's loser aborted before its headers was still sent: its prompt is billed.
    if (result.leg.controller.signal.aborted) this.#charge(result.leg, null, { promptTokens: this.shape.promptTokens, outputTokens: 0, cachedTokens: 0 });
    else this.#useQuota(result.leg, null); // refused or failed: nothing used, the reservation goes back
  }

  /** What an answer cost, once its body has ended: a latency sample for the winner, spend for both. */
  #account(leg: Leg, status: number, firstByteMs: number, end: MeterEnd): void {
    if (status >= 400) {
      // An error answer (the client's own 4xx, passed on) is not billed by providers.
      this.agents.model.count(leg.route.id, leg.won ? status : null, 0, { promptTokens: 0, outputTokens: 0, cachedTokens: 0 });
      this.#useQuota(leg, null);
      return;
    }
    const usage = end.usage;
    const tokens = { promptTokens: usage.promptTokens ?? this.shape.promptTokens, outputTokens: usage.outputTokens, cachedTokens: usage.cachedTokens };
    const served = leg.won && end.end === "complete";
    if (served) {
      const at = clock.now();
      const spend = actualCost(leg.route.pricing, leg.route.provider_type, tokens);
      this.agents.model.served({ route: leg.route.id, at, ttftMs: firstByteMs, totalMs: Date.now() - leg.startedAt, ...tokens }, spend, status);
      this.#useQuota(leg, tokens);
      return;
    }
    this.#charge(leg, leg.won ? status : null, tokens);
  }

  #charge(leg: Leg, status: number | null, tokens: { promptTokens: number; outputTokens: number; cachedTokens: number }): void {
    this.agents.model.count(leg.route.id, status, actualCost(leg.route.pricing, leg.route.provider_type, tokens), tokens);
    this.#useQuota(leg, tokens);
  }

  /** A leg's real use of its quota (null: none), in place of what it reserved. */
  #useQuota(leg: Leg, tokens: { promptTokens: number; outputTokens: number } | null): void {
    const quota = this.agents.quotas.get(leg.route.id);
    if (quota) {
      const used = tokens === null ? 0 : quota.spec.unit === "requests" ? 1 : tokens.promptTokens + tokens.outputTokens;
      quota.settle(leg.reserved, used);
      leg.reserved = 0;
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
