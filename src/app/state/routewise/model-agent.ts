import type { CircuitState } from "../../../core/health/circuit";
import { foldVerdicts, routeAvailable } from "../../../core/routewise/route-circuits";
import type { Demand, Envelope } from "../../../core/routewise/types";
import type { Sealed } from "../../../core/state/batches";
import { Tally } from "../../../lib/counters";
import type { CounterSample } from "../../../core/pool/wire";
import type { EnvelopeRpc } from "./stubs";
import type { EnvelopeNews, EnvelopeSettings, EnvelopeView, RouteSample, RouteVerdict } from "../../../core/routewise/wire";
import { StateClient } from "../state-client";
import { ROUTEWISE_SYNC_MS } from "./sync-interval";

const MAX_BATCH_SAMPLES = 2_000; // a batch is about a second of one isolate's answers; past this many, the oldest go (the object keeps MAX_SAMPLES_PER_ROUTE per route anyway)

/** Counter families this isolate adds up and sends to the model's envelope object. */
export const ROUTEWISE_COUNTERS = {
  spend: "routewise_spend_total",
  tokens: "routewise_tokens_total",
  hedges: "routewise_hedges_total",
  requests: "routewise_requests_total",
  discarded: "routewise_discarded_total",
  finished: "routewise_model_requests_total",
  durationMs: "routewise_request_duration_ms",
} as const;

type TallyKey = keyof typeof ROUTEWISE_COUNTERS;

/**
 * One isolate's agent for one RouteWise model: the shared-state protocol
 * (./state-client.ts) with the envelope object's payload. It holds the routes'
 * envelopes, circuits and the model's demand as the object last answered, with this
 * isolate's own verdicts folded into the circuits at once, and gathers what it served
 * (samples, spend, tokens, hedges, verdicts) for the next batch.
 */
export class ModelAgent extends StateClient<EnvelopeNews, EnvelopeView> {
  protected readonly what = "envelope_sync";
  #settings: EnvelopeSettings;
  #samples: RouteSample[] = [];
  #requests = 0;
  #verdicts: RouteVerdict[] = [];
  /** The object's circuits with this isolate's unacknowledged verdicts on top. */
  #circuits = new Map<string, CircuitState>();
  readonly #tallies = {
    spend: new Tally(["route"]),
    tokens: new Tally(["route", "kind"]),
    hedges: new Tally(["event"]),
    requests: new Tally(["route", "status"]),
    discarded: new Tally(["route", "what"]),
    finished: new Tally(["status"]),
    durationMs: new Tally([]),
  };

  constructor(
    private readonly isolate: () => string,
    model: string,
    settings: EnvelopeSettings,
    private readonly rpc: () => EnvelopeRpc,
    now?: () => number,
  ) {
    super(`routewise:${model}`, ROUTEWISE_SYNC_MS, now);
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

  /** The route's circuit as this isolate knows it: the fleet's, with its own latest verdicts on top. */
  circuit(route: string): CircuitState | undefined {
    return this.#circuits.get(route);
  }

  /** False while the route's shared circuit is open (in its cooldown). */
  healthy(route: string, now: number): boolean {
    return routeAvailable(this.#circuits.get(route), now);
  }

  /** A try's verdict: into this isolate's circuits now, to the model's object with the next batch. */
  outcome(route: string, ok: boolean, now: number): void {
    const verdict = { route, ok, at: now };
    this.#verdicts.push(verdict);
    // A circuit that just changed phase here is news every isolate should route by.
    if (this.#fold([verdict]) > 0) this.markUrgent();
  }

  routed(): void {
    this.#requests++;
  }

  /** A served answer: its latency sample, and its spend and tokens (the sample's unless told: a sample counts one choice of `n`). */
  served(sample: RouteSample, spend: number, status: number, tokens: { promptTokens: number; outputTokens: number; cachedTokens: number } = sample): void {
    this.#samples.push(sample);
    if (this.#samples.length > MAX_BATCH_SAMPLES) this.#samples.shift();
    this.count(sample.route, status, spend, tokens);
  }

  /** Spend and tokens of an answer that is not a latency sample (a hedge's loser, a failed try). */
  count(route: string, status: number | null, spend: number, tokens: { promptTokens: number; outputTokens: number; cachedTokens: number }): void {
    if (status !== null) this.#tallies.requests.add([route, String(status)]);
    if (spend > 0) this.#tallies.spend.add([route], spend);
    if (tokens.promptTokens > 0) this.#tallies.tokens.add([route, "prompt"], tokens.promptTokens);
    if (tokens.outputTokens > 0) this.#tallies.tokens.add([route, "output"], tokens.outputTokens);
    if (tokens.cachedTokens > 0) this.#tallies.tokens.add([route, "cached"], tokens.cachedTokens);
  }

  /** A provider's usage object refused as implausible (src/core/routewise/bounds.ts): counted, never used. */
  usageDiscarded(route: string): void {
    this.#tallies.discarded.add([route, "usage"]);
  }

  /**
   * A request's end, once (its body's last byte, the client leaving, or every route
   * failing): the status the client got and ms since it arrived, for the model's rate,
   * error rate and mean latency. Routes' answers are counted apart, in `count`.
   */
  finished(status: number, durationMs: number): void {
    this.#tallies.finished.add([String(status)]);
    if (Number.isFinite(durationMs)) this.#tallies.durationMs.add([], Math.max(0, Math.round(durationMs)));
  }

  hedge(event: "fired" | "won_by_hedge" | "won_by_primary"): void {
    this.#tallies.hedges.add([event]);
  }

  protected drain(): EnvelopeNews | null {
    const counters: Record<string, CounterSample[]> = {};
    for (const key of Object.keys(this.#tallies) as TallyKey[]) {
      if (!this.#tallies[key].empty) counters[ROUTEWISE_COUNTERS[key]] = this.#tallies[key].drain();
    }
    if (this.#samples.length === 0 && this.#requests === 0 && this.#verdicts.length === 0 && Object.keys(counters).length === 0) return null;
    const news: EnvelopeNews = { samples: this.#samples, requests: this.#requests, counters, verdicts: this.#verdicts };
    this.#samples = [];
    this.#requests = 0;
    this.#verdicts = [];
    return news;
  }

  protected send(batches: Sealed<EnvelopeNews>[]): Promise<EnvelopeView> {
    return this.rpc().sync({ isolate: this.isolate(), settings: this.#settings, batches });
  }

  protected override adopt(view: EnvelopeView): void {
    this.view = view;
    // The object's circuits, plus what this isolate saw that the answer cannot include yet.
    this.#circuits = new Map(Object.entries(view.circuits));
    this.#fold([...this.unacked.flatMap((b) => b.verdicts), ...this.#verdicts]);
  }

  /** Applies verdicts to this isolate's circuits; returns how many changed phase. */
  #fold(verdicts: readonly RouteVerdict[]): number {
    const { changed, transitions } = foldVerdicts(this.#circuits, verdicts, new Set(this.#settings.routes));
    for (const [route, state] of changed) this.#circuits.set(route, state);
    return transitions.length;
  }
}
