/**
 * Limits on what a principal may use (docs/limits.md), enforced once for every surface:
 * before a model call, each limit bucket the request matches reserves its predicted use
 * from this isolate's grant (src/app/state/limits/limit-agent.ts); the reservation is
 * settled with the upstream's own usage as an observer of the attempt engine, so every
 * ending — an answer, the client leaving before or after headers, an upstream error, the
 * deadline, a stream cut — settles it exactly once. Predicted use: the prompt as RouteWise
 * estimates it (errs long) plus `max_tokens` (or DEFAULT_RESERVED_OUTPUT_TOKENS) per answer
 * asked for; spend at the model's prices (the dearest route's, for RouteWise).
 */
import { retryAfterUntil } from "../../core/upstream/attempts";
import type { Reservation } from "../../core/limits/ledger";
import { costOf, dearest, FREE, graphPrices, pricesOf } from "../../core/limits/prices";
import type { Principal } from "../../core/limits/principal";
import type { Bucket } from "../../core/limits/rules";
import { matchingBuckets } from "../../core/limits/rules";
import { NEVER, windowAt } from "../../core/limits/windows";
import type { Dimension, DimensionGrant } from "../../core/limits/wire";
import { askedOutputTokens, estimatePromptTokens, estimateTokens } from "../../core/routewise/tokens";
import type { ConfigSnapshot } from "../../core/targets/snapshot";
import { answeredWithSuccess } from "../../core/upstream/attempts";
import { clock } from "../../lib/clock";
import type { MeteredUsage } from "../engine/usage-meter";
import type { PlanObserver } from "../engine/plan";
import type { LimitAgent, Taken } from "../state/limits/limit-agent";
import type { StateBindings } from "../state/bindings";
import type { IsolateState } from "../state/isolate-state";

export const DEFAULT_RESERVED_OUTPUT_TOKENS = 4_096; // held for an answer that sets no max_tokens: longer than most chat answers; a client that sets max_tokens is held to exactly that
const CONCURRENCY_RETRY_AFTER_S = 1; // a request in flight usually ends within seconds; a concurrency refusal says try again soon

export interface LimitContext {
  env: StateBindings;
  ctx: ExecutionContext;
  state: IsolateState;
  snapshot: ConfigSnapshot;
}

/** What the request is predicted to use, before it is sent. */
export interface Prediction {
  promptTokens: number;
  outputTokens: number;
  /** The most output the request allows (`max_tokens` times `n`), when it says; an output estimated from characters is held to it. */
  outputBound?: number;
}

export type Admission = { ok: true; gate: LimitGate | null } | { ok: false; status: number; code: string; message: string; headers: Record<string, string> };

/** The prediction for a request's body: OpenAI-shaped JSON, else its bytes as text (KServe, graphs). */
export function predictionFor(json: Record<string, unknown> | null, bodyBytes: number, embeddings: boolean): Prediction {
  if (json === null) return { promptTokens: estimateTokens(bodyBytes), outputTokens: 0 };
  const asked = askedOutputTokens(json);
  // Any whole n counts, however large: a pool passes the body on as it is, so an n past
  // OpenAI's 128 reserved as 1 slipped past the token limit. Anything else the upstream refuses.
  const n = [json.n, json.best_of].reduce<number>((most, v) => (typeof v === "number" && Number.isInteger(v) && v >= 1 ? Math.max(most, v) : most), 1);
  const said = asked.ok && asked.tokens !== null;
  const output = embeddings ? 0 : (said ? asked.tokens! : DEFAULT_RESERVED_OUTPUT_TOKENS) * n;
  return { promptTokens: estimatePromptTokens(json), outputTokens: output, ...(said && !embeddings && { outputBound: output }) };
}

const UNLIMITED: Admission = { ok: true, gate: null };

/** A graph request's other names: the graph itself, and on its own path every model that names it. */
export interface GraphCharge {
  name: string;
  /** The model the body names: its steps are priced as that model when it has prices (graph-usage.ts). */
  named?: string;
  /** Called on /graphs/<name>: the rules of every model naming the graph apply, so the path is no way around them. */
  ownPath: boolean;
}

/** The buckets of a graph request: its model's (or the graph's) rules, the graph's own, and on its own path those of every model naming it; each once. */
function graphBuckets(cx: LimitContext, principal: Principal | undefined, model: string, graph: GraphCharge): Bucket[] {
  const names = new Set([model, graph.name]);
  if (graph.ownPath) for (const [named, target] of cx.snapshot.graphModels) if (target === graph.name) names.add(named);
  const seen = new Map<string, Bucket>();
  for (const name of names) for (const bucket of matchingBuckets(cx.snapshot.limits, principal, name)) if (!seen.has(bucket.id)) seen.set(bucket.id, bucket);
  return [...seen.values()];
}

/**
 * Reserves the request's predicted use in every bucket it matches, or refuses it (429 in
 * the caller's shape, naming the limit, with Retry-After unless no wait can make it fit).
 * Null gate: nothing limits it. Answered at once, without a promise, when the grants held
 * here decide it (the steady state); a promise only when some bucket waits for a fresh grant.
 */
export function admit(cx: LimitContext, principal: Principal | undefined, model: string, prediction: Prediction, signal?: AbortSignal, graph?: GraphCharge): Admission | Promise<Admission> {
  const buckets = graph ? graphBuckets(cx, principal, model, graph) : matchingBuckets(cx.snapshot.limits, principal, model);
  if (buckets.length === 0) return UNLIMITED;
  const own = pricesOf(cx.snapshot.config, model);
  const prices = graph ? dearest([own, graphPrices(cx.snapshot.config, graph.name), graph.named !== undefined ? pricesOf(cx.snapshot.config, graph.named) : FREE]) : own;
  const tokens = prediction.promptTokens + prediction.outputTokens;
  const wants: Partial<Record<Dimension, number>> = { requests: 1, tokens, spend: costOf(prices, prediction.promptTokens, 0, prediction.outputTokens), concurrent: 1 };
  const agents = buckets.map((b) => cx.state.limits(cx.env, b.id, b.limits));
  const tried = agents.map((agent) => agent.tryReserve(wants, cx.ctx));
  const decide = (results: readonly Taken[]) => decision(cx, model, prediction, buckets, agents, wants, results);
  if (tried.every((r) => r.ok)) return decide(tried);
  // One bounded wait for a fresh grant (a cold isolate, a grant run low, a new window, a
  // higher peak), the buckets that need one waiting at once rather than one after another.
  return Promise.all(tried.map((r, i) => (r.ok ? r : agents[i]!.reserveWaiting(wants, cx.ctx, signal)))).then(decide);
}

function decision(cx: LimitContext, model: string, prediction: Prediction, buckets: readonly Bucket[], agents: readonly LimitAgent[], wants: Partial<Record<Dimension, number>>, results: readonly Taken[]): Admission {
  const short = results.findIndex((r) => !r.ok);
  if (short >= 0) {
    results.forEach((r, i) => r.ok && agents[i]!.release(r.reservation));
    const agent = agents[short]!;
    const dim = (results[short] as Extract<Taken, { ok: false }>).dim;
    if (!agent.unreachable) agent.refused(dim, cx.ctx);
    return refusal(buckets[short]!, agent, dim, wants[dim] ?? 0, agents);
  }
  const taken = results.map((r, i) => ({ agent: agents[i]!, reservation: (r as Extract<Taken, { ok: true }>).reservation }));
  return { ok: true, gate: new LimitGate(cx, model, prediction, taken, agents) };
}

/**
 * The reservations of one admitted request, settled once: with the usage of the answer
 * the client got (estimated where the upstream reported none, unless it was an error
 * answer), or with none when no answer was delivered (the request still counts as one
 * request).
 */
export class LimitGate {
  #settled = false;
  #delivered = false;
  #usage: MeteredUsage | null = null;
  #winner: string | null = null;
  /** The delivered answer had a success status (an error answer is charged only what it reports). */
  #succeeded = true;
  /** The settled use was estimated, not reported by the upstream (for the report and tests). */
  estimated = false;

  constructor(
    private readonly cx: LimitContext,
    private readonly model: string,
    private readonly prediction: Prediction,
    private readonly taken: readonly { agent: LimitAgent; reservation: Reservation }[],
    private readonly agents: readonly LimitAgent[],
  ) {}

  /** Told the attempts' endings by the engine: the delivered one's usage settles the reservation. */
  readonly observer: PlanObserver = {
    ended: (a, end) => {
      if (!end.won) return;
      this.#winner = a.target.id;
      this.#usage = end.usage;
      this.#succeeded = answeredWithSuccess(end.attempt.outcome);
    },
    delivered: () => {
      this.#delivered = true;
    },
    settled: (s) => this.settle(s.delivered ? "delivered" : "failed"),
  };

  /**
   * Settles as failed if the client leaves before an answer is delivered. A client that
   * leaves while its request awaits something before the engine runs (a pin claim, a cold
   * isolate's first view of a pool or a RouteWise model) cancels the handler mid-await, so nothing after that
   * await runs, the engine's own settle included: its reservation would be held for good
   * (with a concurrency limit of 1, the key refused from then on). Once delivered, the
   * engine settles with what passed.
   */
  watch(signal: AbortSignal): void {
    const left = () => {
      if (!this.#delivered) this.settle("failed");
    };
    if (signal.aborted) return left();
    // Left attached once settled (it then does nothing): the signal is the request's own and
    // goes with it, and a removal is one more call into the runtime on every limited request.
    signal.addEventListener("abort", left);
  }

  /**
   * Settles every reservation once. `delivered`: what the answer's usage says (output
   * estimated from what passed when it said nothing); `failed`: nothing reached the client;
   * `estimated`: no usage can be read, so the prediction is charged.
   */
  settle(how: "delivered" | "failed" | "estimated"): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#charge(this.#used(how));
  }

  /** A graph's request, settled once with the sum of its steps' use (./graph-usage.ts). */
  settleSteps(use: { tokens: number; spend: number; estimated: boolean }): void {
    if (this.#settled) return;
    this.#settled = true;
    this.estimated = use.estimated;
    this.#charge({ requests: 1, tokens: use.tokens, spend: use.spend });
  }

  #charge(used: Partial<Record<Dimension, number>>): void {
    for (const t of this.taken) t.agent.settle(t.reservation, used, this.cx.ctx, this.estimated);
  }

  #used(how: "delivered" | "failed" | "estimated"): Partial<Record<Dimension, number>> {
    if (how === "failed") return { requests: 1 };
    const usage = this.#usage;
    if (how === "delivered" && !this.#succeeded && !usage?.reported) return { requests: 1 }; // an error answer: only what it reports
    if (how === "estimated" || usage === null) {
      this.estimated = true;
      const prices = pricesOf(this.cx.snapshot.config, this.model);
      return { requests: 1, tokens: this.prediction.promptTokens + this.prediction.outputTokens, spend: costOf(prices, this.prediction.promptTokens, 0, this.prediction.outputTokens) };
    }
    const prompt = usage.promptTokens ?? (this.#succeeded ? this.prediction.promptTokens : 0);
    // Reported output with no prompt count: the prompt charged is the prediction, so the whole is an estimate.
    this.estimated = !usage.reported || (usage.promptTokens === null && this.#succeeded);
    // Four characters a token errs long for some text; the model cannot have written more than it was allowed.
    const output = !usage.reported && this.prediction.outputBound !== undefined ? Math.min(usage.outputTokens, this.prediction.outputBound) : usage.outputTokens;
    const prices = pricesOf(this.cx.snapshot.config, this.model, this.#winner ?? undefined);
    return { requests: 1, tokens: prompt + output, spend: costOf(prices, prompt, usage.cachedTokens, output) };
  }

  /** OpenAI's x-ratelimit headers for this principal: the tightest bucket's requests and tokens; and a near-budget warning. */
  headers(): Record<string, string> {
    return limitHeaderRecord(this.agents);
  }

  /**
   * The same headers, set on an answer's own (which throws when they are immutable). An
   * upstream's own `x-ratelimit-*` and `anthropic-ratelimit-*` go first: beside the
   * principal's they would mix two accounts' numbers, and show the operator's provider quota.
   */
  setHeaders(headers: Headers): void {
    const upstreams: string[] = [];
    for (const name of headers.keys()) if (isUpstreamRateLimit(name)) upstreams.push(name);
    for (const name of upstreams) headers.delete(name);
    limitHeaders(this.agents, (name, value) => headers.set(name, value));
  }
}

export const BUDGET_WARNING_HEADER = "x-switchyard-budget-warning";
/** An upstream's own rate-limit headers, OpenAI's and Anthropic's names: the operator's provider quota, never a limited principal's. */
export const isUpstreamRateLimit = (name: string): boolean => name.startsWith("x-ratelimit-") || name.startsWith("anthropic-ratelimit-");

/**
 * `spend 92% of 200 used (team research, month)`: of the spend budgets this request is
 * charged to, the most used one past its `warn_at`, so a principal hears of it before
 * refusals start. Used as this isolate knows it (the object's count at its last answer
 * plus this isolate's use since): other isolates' use of the last sync may be missing.
 */
function budgetWarning(agents: readonly LimitAgent[]): string | null {
  let most: { agent: LimitAgent; fraction: number } | null = null;
  for (const agent of agents) {
    const limit = agent.ledger.limits.spend;
    const used = agent.used("spend");
    if (!limit || used === null) continue;
    const fraction = used / limit.total;
    if (fraction >= (limit.warnAt ?? 1) && (most === null || fraction > most.fraction)) most = { agent, fraction };
  }
  if (!most) return null;
  const limit = most.agent.ledger.limits.spend!;
  const scope = most.agent.bucket.replace(/,spend=[^,]*$/, "").replaceAll("=", " ").replaceAll(",", ", "); // the window follows: a second window's bucket names it already
  const window = limit.window === "fixed" && limit.resetAt !== undefined && clock.now() < limit.resetAt ? `until ${new Date(limit.resetAt).toISOString()}` : limit.window;
  return `spend ${Math.round(most.fraction * 100)}% of ${round(limit.total)} used (${scope}, ${window})`;
}

/** Each dimension's name in OpenAI's x-ratelimit headers, the names built once. */
const RATE_LIMIT_HEADERS = (["requests", "tokens"] as const).map((dim) => ({ dim, limit: `x-ratelimit-limit-${dim}`, remaining: `x-ratelimit-remaining-${dim}`, reset: `x-ratelimit-reset-${dim}` }));

/** The x-ratelimit headers (each dimension's tightest bucket) and a budget warning, each given to `put`. */
function limitHeaders(agents: readonly LimitAgent[], put: (name: string, value: string) => void): void {
  const now = clock.now();
  for (const names of RATE_LIMIT_HEADERS) {
    let tightest: { grant: DimensionGrant; remaining: number } | null = null;
    for (const agent of agents) {
      const s = agent.standing(names.dim);
      if (s && (tightest === null || s.remaining < tightest.remaining)) tightest = s;
    }
    if (!tightest) continue;
    put(names.limit, String(tightest.grant.total));
    put(names.remaining, String(Math.floor(tightest.remaining)));
    put(names.reset, duration(Math.max(0, tightest.grant.endsAt - now)));
  }
  const warning = budgetWarning(agents);
  if (warning !== null) put(BUDGET_WARNING_HEADER, warning);
}

function limitHeaderRecord(agents: readonly LimitAgent[]): Record<string, string> {
  const headers: Record<string, string> = {};
  limitHeaders(agents, (name, value) => (headers[name] = value));
  return headers;
}

const WHAT: Record<Dimension, string> = { requests: "requests per minute", tokens: "tokens per minute", spend: "spend", concurrent: "concurrent requests" };

function refusal(bucket: Bucket, agent: LimitAgent, dim: Dimension, wanted: number, agents: readonly LimitAgent[]): Admission {
  const headers = limitHeaderRecord(agents); // the same as an answer's: each dimension's tightest bucket, whichever refused
  if (agent.unreachable) {
    return { ok: false, status: 503, code: "limits_unavailable", message: `The limits of '${bucket.id}' could not be read from their Durable Object just now; retry shortly`, headers: { ...headers, "retry-after": "1" } };
  }
  const limit = bucket.limits[dim]!;
  const now = clock.now();
  const endsAt = agent.standing(dim)?.grant.endsAt ?? windowAt(limit.window, now, limit.resetAt).endsAt;
  const retryAfterS = dim === "concurrent" || endsAt === NEVER ? CONCURRENCY_RETRY_AFTER_S : retryAfterUntil(endsAt, now);
  const remaining = agent.standing(dim)?.remaining ?? 0;
  const code = dim === "spend" ? "insufficient_quota" : "rate_limit_exceeded";
  const limited = { ...headers, "x-switchyard-limit": `${bucket.id} ${dim}` };
  if (wanted > limit.total) {
    // No window's end makes room for it: a Retry-After would send the client back to the same refusal.
    const smaller = dim === "tokens" || dim === "spend" ? `; send a shorter prompt or a lower max_tokens (without one, ${DEFAULT_RESERVED_OUTPUT_TOKENS} output tokens are held per answer)` : "";
    const message = `Limit reached for ${bucket.id}: ${WHAT[dim]} ${round(limit.total)}, this request alone needs ${round(wanted)}, more than the whole limit, so retrying will not help${smaller}`;
    // x-should-retry: the OpenAI and Anthropic SDKs retry a 429 on their own otherwise, two more refusals.
    return { ok: false, status: 429, code, message, headers: { ...limited, "x-should-retry": "false" } };
  }
  if (dim !== "concurrent" && endsAt === NEVER) {
    // A fixed budget past its reset date never starts afresh again: only a new limit in the config makes room.
    const message = `Limit reached for ${bucket.id}: ${WHAT[dim]} ${round(limit.total)}, ${round(remaining)} left, this request needs ${round(wanted)}; the budget does not reset again, so retrying will not help`;
    return { ok: false, status: 429, code, message, headers: { ...limited, "x-should-retry": "false" } };
  }
  const message = `Limit reached for ${bucket.id}: ${WHAT[dim]} ${round(limit.total)}, ${round(remaining)} left, this request needs ${round(wanted)}; retry after ${retryAfterS} s`;
  return { ok: false, status: 429, code, message, headers: { ...limited, "retry-after": String(retryAfterS) } };
}

const round = (x: number): string => String(Math.round(x * 1e6) / 1e6);

/** OpenAI's reset format: `1s`, `6m0s`, `20ms`. */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.ceil(ms)}ms`;
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60}s`;
  return `${Math.floor(m / 60)}h${m % 60}m${s % 60}s`;
}
