import type { Demand, Envelope } from "../../../core/routewise/types";
import { Tally } from "../../../lib/counters";
import type { CounterSample } from "../../../core/pool/wire";
import type { EnvelopeRpc } from "./stubs";
import type { EnvelopeSettings, EnvelopeView, RouteSample } from "../../../core/routewise/wire";
import { ViewAgent } from "./view-agent";

const COOLDOWN_FAILURES = 3; // consecutive failed tries before a route is set aside (LiteLLM's allowed_fails)
const COOLDOWN_MS = 10_000; // LiteLLM's cooldown is 5 s; a provider outage rarely clears faster than this
const MAX_PENDING_SAMPLES = 5_000; // ~10 s of a busy isolate's samples kept while the object is unreachable; older ones are dropped

/** Counter families this isolate adds up and sends to the model's envelope object. */
export const ROUTEWISE_COUNTERS = {
  spend: "routewise_spend_total",
  tokens: "routewise_tokens_total",
  hedges: "routewise_hedges_total",
  requests: "routewise_requests_total",
} as const;

type TallyKey = keyof typeof ROUTEWISE_COUNTERS;

/**
 * One isolate's agent for one RouteWise model: the routes' envelopes and the model's
 * demand as the envelope object last answered, and what this isolate served since
 * (samples, spend, tokens, hedges) waiting for the next exchange.
 */
export class ModelAgent extends ViewAgent<EnvelopeView> {
  protected readonly what = "envelope_sync";
  #settings: EnvelopeSettings;
  #samples: RouteSample[] = [];
  #requests = 0;
  /** Consecutive failures and cooldown end, per route: this isolate's own judgement, not shared. */
  #failures = new Map<string, { count: number; until: number }>();
  readonly #tallies = {
    spend: new Tally(["route"]),
    tokens: new Tally(["route", "kind"]),
    hedges: new Tally(["event"]),
    requests: new Tally(["route", "status"]),
  };

  constructor(
    private readonly isolate: () => string,
    settings: EnvelopeSettings,
    private readonly rpc: () => EnvelopeRpc,
    now?: () => number,
  ) {
    super(now);
    this.#settings = settings;
  }

  update(settings: EnvelopeSettings): void {
    this.#settings = settings;
  }

  envelope(route: string): Envelope | null {
    return this.view?.envelopes[route] ?? null;
  }

  get demand(): Demand {
    return this.view?.demand ?? { requestsPerS: 0 };
  }

  /** False while a route cools down after COOLDOWN_FAILURES failed tries in a row. */
  healthy(route: string, now: number): boolean {
    return (this.#failures.get(route)?.until ?? 0) <= now;
  }

  /** A try's verdict: a success clears the route's failures; enough failures in a row cool it down. */
  outcome(route: string, ok: boolean, now: number): void {
    if (ok) {
      this.#failures.delete(route);
      return;
    }
    const f = this.#failures.get(route) ?? { count: 0, until: 0 };
    f.count++;
    if (f.count >= COOLDOWN_FAILURES) {
      f.count = 0;
      f.until = now + COOLDOWN_MS;
    }
    this.#failures.set(route, f);
  }

  routed(): void {
    this.#requests++;
  }

  served(sample: RouteSample, spend: number, status: number): void {
    this.#samples.push(sample);
    if (this.#samples.length > MAX_PENDING_SAMPLES) this.#samples.shift();
    this.count(sample.route, status, spend, sample);
  }

  /** Spend and tokens of an answer that is not a latency sample (a hedge's loser, a failed try). */
  count(route: string, status: number | null, spend: number, tokens: { promptTokens: number; outputTokens: number; cachedTokens: number }): void {
    if (status !== null) this.#tallies.requests.add([route, String(status)]);
    if (spend > 0) this.#tallies.spend.add([route], spend);
    if (tokens.promptTokens > 0) this.#tallies.tokens.add([route, "prompt"], tokens.promptTokens);
    if (tokens.outputTokens > 0) this.#tallies.tokens.add([route, "output"], tokens.outputTokens);
    if (tokens.cachedTokens > 0) this.#tallies.tokens.add([route, "cached"], tokens.cachedTokens);
  }

  hedge(event: "fired" | "won_by_hedge" | "won_by_primary"): void {
    this.#tallies.hedges.add([event]);
  }

  protected async exchange(): Promise<EnvelopeView> {
    const samples = this.#samples;
    const requests = this.#requests;
    const counters: Record<string, CounterSample[]> = {};
    for (const key of Object.keys(this.#tallies) as TallyKey[]) {
      if (!this.#tallies[key].empty) counters[ROUTEWISE_COUNTERS[key]] = this.#tallies[key].drain();
    }
    this.#samples = [];
    this.#requests = 0;
    try {
      return await this.rpc().sync({ isolate: this.isolate(), settings: this.#settings, samples, requests, counters });
    } catch (error) {
      // Not lost: the next exchange carries it.
      this.#samples = [...samples, ...this.#samples].slice(-MAX_PENDING_SAMPLES);
      this.#requests += requests;
      for (const key of Object.keys(this.#tallies) as TallyKey[]) this.#tallies[key].restore(counters[ROUTEWISE_COUNTERS[key]] ?? []);
      throw error;
    }
  }
}
