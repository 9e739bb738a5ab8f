import type { CircuitState } from "../../core/health/circuit";
import { admit, newCircuit, peek } from "../../core/health/circuit";
import type { RandomSource } from "../../lib/random";
import { PrefixIndex } from "../../core/picking/prefix/prefix-index";
import type { EngineCacheInfo, IndexSize } from "../../core/picking/prefix/index-sizing";
import { DEFAULT_INDEX_CAPACITY_BLOCKS, engineIndexBlocks, replicaIndexSize } from "../../core/picking/prefix/index-sizing";
import { isFresh } from "../../core/picking/scoring/freshness";
import type { Objective } from "../../core/picking/scoring/slo";
import type { TtftInput } from "../../core/picking/scoring/ttft-model";
import { TtftModel, queueingAhead } from "../../core/picking/scoring/ttft-model";
import { EngineSlots } from "../../core/picking/scoring/engine-slots";
import { PrefixLoad, openingKey } from "../../core/picking/prefix/prefix-load";
import type { PickerState, RequestFeatures } from "../../core/picking/scoring/types";
import { INITIAL_PICKER_STATE } from "../../core/picking/scoring/types";
import type { Choice } from "../../core/pool/choose";
import { applyOutcomes, choose } from "../../core/pool/choose";
import type { PoolRpc } from "./stubs";
import type { Keeper } from "./sync-loop";
import { heldOpenWithin } from "./sync-loop";
import { StateClient } from "./state-client";
import type { Sealed } from "../../core/state/batches";
import { Tally } from "../../lib/counters";
import type { ReplicaMetrics } from "../../core/picking/vllm-metrics";
import type { PrefixInsert } from "../../core/pool/prefix-log";
import { WaitRoom } from "./wait-room";
import { PREFILL_WAIT_MAX_MS, PrefillGate, waitForPrefill } from "./prefill-gate";
import { tenantShare } from "../../core/pool/wait-queue";
import type { AttemptReport, OutcomeReport, PoolNews, PoolSpec, PoolView, ProbeResult } from "../../core/pool/wire";

export const SYNC_INTERVAL_MS = 500; // an isolate exchanges with a pool's object at most twice a second; bounds its view's age
export const HEARTBEAT_MS = 2_000; // with requests in flight and nothing else to say, report at least this often (5 per ISOLATE_REPORT_TTL_MS)
export const PREFIX_BATCH_MAX_HASHES = 20_000; // per batch, as PREFIX_SYNC_MAX_HASHES per answer: ~200 KB; past it the guess is already stale

/** What this isolate's prefix index expected of the prompts it sent: for /routing and the routing-quality bench. */
export interface ExpectedHits {
  /** Σ over attempts of the leading blocks the index said the chosen replica held. */
  hitBlocks: number;
  /** Σ over attempts of the prompt's hashed blocks. */
  lookedUpBlocks: number;
}

/** A request's latency objectives, ms: time to first token, time per output token. */
export interface SloTargets {
  ttftMs?: number;
  tpotMs?: number;
}

export interface FinishedRequest {
  model: string;
  /** Status the client received (499 when it left). */
  status: number;
  attempts: AttemptReport[];
  /** Token of the half-open probe the first attempt was admitted as. */
  probe: string | null;
  /** Domain time the request ended. */
  at: number;
  /** From its arrival to its end (the answer's last byte, or the client leaving), ms. */
  durationMs: number;
}

/**
 * One isolate's agent for one pool: the shared-state protocol (./state-client.ts) with
 * the pool's payload. It routes from a view of the pool — circuits and every other
 * isolate's in-flight load, as the pool's object last answered, with this isolate's own
 * outcomes folded in at once and its own in-flight counted exactly — and reports to the
 * object in batches off the response path. Besides the batches, every exchange carries
 * the isolate's in-flight count (absolute, so a lost one heals with the next) and its
 * prefix-log cursor. The view is refreshed at most every SYNC_INTERVAL_MS while requests
 * arrive; see docs/state.md for the bounds.
 */
export class PoolAgent extends StateClient<PoolNews, PoolView> {
  protected readonly what = "pool_sync";
  #spec: PoolSpec;
  #circuits = new Map<string, CircuitState>();
  #others = new Map<string, number>();
  #metrics = new Map<string, ReplicaMetrics>();
  #local = new Map<string, number>();
  #localTotal = 0;
  #critical = 0;
  #outcomes: OutcomeReport[] = [];
  #requests = new Tally(["model", "replica", "status"]);
  #durationMs = new Tally(["model"]);
  #attempts = new Tally(["replica", "verdict"]);
  #fallbacks = new Tally(["model"]);
  #prefix: PrefixInsert[] = [];
  /** The current batch's inserts by replica and last block: a chained hash names the whole prefix, so a repeat is dropped. */
  #prefixSeen = new Set<string>();
  #prefixHashes = 0;
  #prefixCursor = 0;
  #prefixSink: ((inserts: readonly PrefixInsert[]) => void) | null = null;
  /** This isolate's guess of what each replica caches: its own routed prompts and the other isolates' (via the pool's object). */
  #index: PrefixIndex;
  /** Each replica's KV cache as its engine last said; kept through failed scrapes, as an engine's cache size is fixed for its life. */
  #engineCache = new Map<string, EngineCacheInfo>();
  /** Each configured replica's index capacity and where it came from. */
  #indexSizes = new Map<string, IndexSize>();
  #expected: ExpectedHits = { hitBlocks: 0, lookedUpBlocks: 0 };
  #picker: PickerState = INITIAL_PICKER_STATE;
  /** Time to first token as this isolate has seen the pool answer (scoring policies only). */
  #ttft = new TtftModel();
  /** This isolate's requests in flight per replica and prompt opening (the busy cap's idle rule). */
  #prefixLoad = new PrefixLoad();
  readonly #prefill = new PrefillGate();
  /** Each replica's running slots as its scrapes have shown them (the TTFT model's knee). */
  #slots = new EngineSlots();
  /** Requests waiting for this pool's capacity in this isolate (the pool's `queue`). */
  readonly waiting: WaitRoom;

  constructor(
    private readonly isolate: () => string,
    spec: PoolSpec,
    private readonly rpc: () => PoolRpc,
    now: () => number = Date.now,
  ) {
    super(`pool:${spec.pool}`, SYNC_INTERVAL_MS, now);
    this.#spec = spec;
    this.#index = new PrefixIndex(spec.indexCapacityBlocks ?? DEFAULT_INDEX_CAPACITY_BLOCKS);
    this.#sizeIndex();
    this.waiting = new WaitRoom(spec.queue.maxWaiting, tenantShare(spec.queue.maxWaiting, spec.queue.maxPerTenant));
  }

  /** The spec this isolate routes with: the config version it serves. */
  update(spec: PoolSpec): void {
    if (spec === this.#spec) return;
    const ids = new Set(spec.replicas.map((r) => r.id));
    this.#index.retain(ids); // a replica that left takes its blocks with it
    for (const id of this.#engineCache.keys()) if (!ids.has(id)) this.#engineCache.delete(id);
    this.#indexSizes.clear();
    this.#spec = spec;
    this.#sizeIndex(); // the configured capacity may have changed, and the pool's size bounds an engine-sized one
    this.waiting.limit(spec.queue.maxWaiting, tenantShare(spec.queue.maxWaiting, spec.queue.maxPerTenant));
  }

  get localInflight(): ReadonlyMap<string, number> {
    return this.#local;
  }

  /** First request of this isolate for the pool: wait (bounded) for the shared state. */
  async coldStart(keeper: Keeper): Promise<void> {
    await this.ready(keeper);
  }

  /**
   * While requests wait for capacity the view is refreshed every interval, whether or not
   * new requests arrive: other isolates' releases show only through it.
   */
  keepFresh(keeper: Keeper): void {
    this.nudge(keeper);
  }

  /** Called periodically by each request in flight: keeps this isolate's in-flight report alive. */
  heartbeat(keeper: Keeper): void {
    if (this.#localTotal > 0 && this.now() - this.lastExchangeAt >= HEARTBEAT_MS) this.nudge(keeper);
  }

  /**
   * Orders the pool's replicas for one request from this isolate's view. `request` is
   * what the scoring policies read of it; metrics older than the pool's stale_ms are
   * judged stale by the policy itself (time is `now`).
   */
  choose(pinned: string | null, forced: string | null, random: RandomSource, now: number, request?: RequestFeatures, slo?: SloTargets): Choice {
    let matches: Map<string, number> | undefined; // one index walk per request, however many replicas are predicted
    const predictMs =
      request &&
      ((id: string) => {
        if (this.#ttft.observations === 0) return null;
        matches ??= this.#index.match(request.hashes);
        return this.#ttft.predict(this.ttftInput(id, request, { matches, now }));
      });
    const objectives: Objective[] = [];
    if (predictMs && slo?.ttftMs !== undefined) objectives.push({ objectiveMs: slo.ttftMs, predictMs });
    if (request && slo?.tpotMs !== undefined) objectives.push({ objectiveMs: slo.tpotMs, predictMs: (id) => this.#freshTpot(id, now) });
    const opening = request ? this.openingOf(request) : null;
    const prefixLoad = (id: string) => this.#prefixLoad.of(id, opening);
    const scoring = request && { request, index: this.#index, metrics: (id: string) => this.metricsOf(id), state: this.#picker, slo: objectives, predictTtftMs: predictMs, prefixLoad };
    const choice = choose({ spec: this.#spec, circuits: this.#circuits, load: (id) => this.#load(id), pinned, forced, random, now, scoring });
    if (choice.state) this.#picker = choice.state;
    return choice;
  }

  /** A replica's recent time per output token from its engine's own histogram, if its metrics are fresh. */
  #freshTpot(replica: string, now: number): number | null {
    const m = this.#metrics.get(replica) ?? null;
    return isFresh(m, now, this.#spec.metrics.staleMs) ? m.tpotMs : null;
  }

  /** Replicas a request may be sent to now (weight > 0, circuit not refusing). */
  routable(now: number): string[] {
    return this.#spec.replicas
      .filter((r) => r.weight > 0 && peek(this.#circuits.get(r.id) ?? newCircuit(), now, this.#spec.circuit) !== "no")
      .map((r) => r.id);
  }

  /**
   * A half-open probe is one decision for the whole pool, so it is the one awaited call
   * outside a pin miss; it happens once per cooldown, not in steady state. If the object
   * cannot be reached the isolate decides alone: state is an optimisation of routing.
   */
  async admitProbe(replica: string, ttlMs: number, now: number, keeper: Keeper): Promise<ProbeResult> {
    try {
      const result = await heldOpenWithin(keeper, this.rpc().admitProbe({ spec: this.#spec, replica, ttlMs }));
      this.#circuits.set(replica, result.circuit);
      return result;
    } catch (error) {
      logFailure("probe_admission", this.#spec.pool, error);
      const local = admit(this.#circuits.get(replica) ?? newCircuit(), now, this.#spec.circuit);
      this.#circuits.set(replica, local.state);
      return { admission: local.admission, token: local.admission === "probe" ? `local:${crypto.randomUUID()}` : null, circuit: local.state };
    }
  }

  /** Counted at once, so the next pick of a burst sees it; `opening` (openingOf) also counts it against its prompt's opening. */
  lease(replica: string, opening: number | null = null): void {
    this.#adjust(replica, +1);
    this.#prefixLoad.add(replica, opening, +1);
  }

  move(from: string, to: string, opening: number | null = null): void {
    if (from === to) return;
    this.#adjust(from, -1);
    this.#adjust(to, +1);
    this.#prefixLoad.add(from, opening, -1);
    this.#prefixLoad.add(to, opening, +1);
  }

  /** A request of this isolate is done with the replica: its slot goes to the next waiters at once, if any. */
  release(replica: string, opening: number | null = null): void {
    this.#adjust(replica, -1);
    this.#prefixLoad.add(replica, opening, -1);
    this.waiting.offer();
  }

  /**
   * For `policy: switchyard`, a request about to be sent to `replica` (./prefill-gate.ts):
   * `wait` while another request of this isolate prefills the same opening there; or, a
   * streamed request whose opening the replica does not hold, `warmed` to call once its
   * first chunk has come or it has ended. Nothing for other policies or unhashed prompts.
   */
  prefillGate(replica: string, request: RequestFeatures, opening: number | null): { wait?: (signal?: AbortSignal) => Promise<void>; warmed?: () => void } {
    if (this.#spec.policy !== "switchyard" || opening === null) return {};
    const ready = this.#prefill.warming(replica, opening);
    if (ready) return { wait: (signal) => waitForPrefill(ready, PREFILL_WAIT_MAX_MS, signal) };
    if (request.streamed && this.#index.heldRun(replica, request.hashes) < this.#spec.scoring.switchyard.minMatchBlocks) return { warmed: this.#prefill.warm(replica, opening) };
    return {};
  }

  /** Openings being prefilled by this isolate's requests (for tests). */
  get prefilling(): number {
    return this.#prefill.size;
  }

  /** The key of a request's prompt opening (prefix/prefix-load.ts), as long as the shortest match affinity follows. */
  openingOf(request: RequestFeatures): number | null {
    return openingKey(request.hashes, this.#spec.scoring.switchyard.minMatchBlocks);
  }

  /** Gives back a slot held for a waiter (./wait-room.ts), without offering it: its own pick takes it next. */
  unlease(replica: string): void {
    this.#adjust(replica, -1);
  }

  /** Critical requests of this isolate admitted and not yet settled (the pool's critical share bounds them). */
  get criticalInflight(): number {
    return this.#critical;
  }

  /** One more (+1) or one fewer (-1) critical request in flight. */
  critical(delta: 1 | -1): void {
    this.#critical = Math.max(0, this.#critical + delta);
  }

  /** A finished request: its verdicts go into this isolate's circuits now, and to the object with the next batch. */
  finished(request: FinishedRequest, keeper: Keeper): void {
    const outcomes = request.attempts.map((a, i): OutcomeReport => ({ replica: a.replica, verdict: a.verdict, at: request.at, probe: i === 0 ? request.probe : null }));
    const transitions = this.#fold(outcomes);
    this.#outcomes.push(...outcomes);
    const served = request.attempts[request.attempts.length - 1];
    this.#requests.add([request.model, served?.replica ?? "none", String(request.status)]);
    if (Number.isFinite(request.durationMs)) this.#durationMs.add([request.model], Math.max(0, Math.round(request.durationMs)));
    for (const a of request.attempts) this.#attempts.add([a.replica, a.verdict]);
    if (request.attempts.length > 1) this.#fallbacks.add([request.model]);
    // A circuit that just changed phase here is news every isolate should route by.
    if (transitions > 0) this.markUrgent();
    this.nudge(keeper);
  }

  /**
   * Records that a prompt's blocks went to a replica (this isolate's guess of what the
   * replica now caches), for the other isolates with the next batch.
   */
  routedPrefix(insert: PrefixInsert): void {
    const n = insert.hashes.length;
    if (n === 0) return;
    // What the index expects the engine to find cached, before this prompt is recorded as cached.
    this.#expected.hitBlocks += this.#index.heldRun(insert.replica, insert.hashes);
    this.#expected.lookedUpBlocks += n;
    this.#index.add(insert.replica, insert.hashes);
    // The others need each prefix once per batch (a busy tenant repeats it every request),
    // and a batch stays bounded however fast requests come: the index is a guess anyway.
    const key = `${insert.replica}\u0000${insert.hashes[n - 1]}`;
    if (this.#prefixSeen.has(key) || this.#prefixHashes + n > PREFIX_BATCH_MAX_HASHES) return;
    this.#prefixSeen.add(key);
    this.#prefixHashes += n;
    this.#prefix.push(insert);
  }

  /** Also told of the other isolates' prefix inserts as they arrive (besides this isolate's own index). */
  onPrefixInserts(sink: (inserts: readonly PrefixInsert[]) => void): void {
    this.#prefixSink = sink;
  }

  /**
   * What the TTFT predictor knows of sending `request` to `replica` now: the router's
   * in-flight count (as the busy cap counts it; `leased` when this request's own lease is
   * already in it) and the queue that count implies past the engine's running slots.
   */
  ttftInput(replica: string, request: RequestFeatures, at: { matches?: ReadonlyMap<string, number>; now?: number; leased?: boolean } = {}): TtftInput {
    const held = (at.matches ?? this.#index.match(request.hashes)).get(replica) ?? 0;
    const metrics = this.metricsOf(replica);
    const now = at.now ?? this.now();
    const inflight = Math.max(0, this.#load(replica) - (at.leased ? 1 : 0));
    const waiting = metrics && isFresh(metrics, now, this.#spec.scoring.stalenessMs) ? metrics.waiting : null;
    return { uncachedBlocks: request.hashes.length - held, inflight, queued: queueingAhead(inflight, this.#slots.of(replica), waiting) };
  }

  /** A streamed answer's first chunk came `ms` after its try started. */
  observeTtft(input: TtftInput, ms: number): void {
    this.#ttft.observe(input, ms);
  }

  /** The pool's fitted TTFT model as this isolate has learned it (for /routing and tests). */
  get ttftModel(): { observations: number; coefficients: readonly number[] } {
    return { observations: this.#ttft.observations, coefficients: this.#ttft.coefficients };
  }

  /** Blocks the isolate's prefix index holds per replica (for /routing and tests). */
  indexedBlocks(): Record<string, number> {
    return Object.fromEntries(this.#spec.replicas.map((r) => [r.id, this.#index.blocksOf(r.id)]));
  }

  /** Each replica's index capacity and where it came from (for /routing and tests). */
  indexSizes(): Record<string, IndexSize> {
    return Object.fromEntries(this.#spec.replicas.map((r) => [r.id, this.#indexSizes.get(r.id)!]));
  }

  /** What the index expected of the prompts this isolate sent since it started (for /routing and the bench). */
  get expectedHits(): ExpectedHits {
    return { ...this.#expected };
  }

  /** Sizes each replica's index from the config, else its engine's cache, else the default; a shrunk one evicts at once. */
  #sizeIndex(): void {
    const replicas = this.#spec.replicas.length;
    for (const { id } of this.#spec.replicas) {
      const size = replicaIndexSize(this.#spec.indexCapacityBlocks, this.#engineCache.get(id) ?? null, replicas);
      const before = this.#indexSizes.get(id);
      if (before?.blocks === size.blocks && before.sizedBy === size.sizedBy) continue;
      this.#indexSizes.set(id, size);
      this.#index.setCapacity(id, size.blocks);
    }
  }

  /** The replicas' own metrics as the pool's object last read them (null: none, or none yet). */
  metricsOf(replica: string): ReplicaMetrics | null {
    return this.#metrics.get(replica) ?? null;
  }

  /** Schedules a report of changed load. */
  dirty(keeper: Keeper): void {
    this.nudge(keeper);
  }

  /** Requests in flight on a replica: every other isolate's as last reported, this isolate's exactly. */
  load(replica: string): number {
    return this.#load(replica);
  }

  #load(replica: string): number {
    return (this.#others.get(replica) ?? 0) + (this.#local.get(replica) ?? 0);
  }

  #adjust(replica: string, delta: number): void {
    const next = (this.#local.get(replica) ?? 0) + delta;
    if (next < 0) return; // a release without its lease (replica left the config): never negative
    this.#localTotal += delta;
    if (next === 0) this.#local.delete(replica);
    else this.#local.set(replica, next);
  }

  /** Applies outcomes to this isolate's circuits; returns how many changed phase. */
  #fold(outcomes: readonly OutcomeReport[]): number {
    const { changed, transitions } = applyOutcomes(this.#circuits, outcomes, this.#spec, (o) => o.probe !== null);
    for (const [replica, state] of changed) this.#circuits.set(replica, state);
    return transitions.length;
  }

  protected drain(): PoolNews | null {
    if (this.#outcomes.length === 0 && this.#prefix.length === 0 && this.#requests.empty && this.#attempts.empty && this.#fallbacks.empty) return null;
    const news: PoolNews = {
      outcomes: this.#outcomes,
      prefix: this.#prefix,
      requests: this.#requests.drain(),
      attempts: this.#attempts.drain(),
      fallbacks: this.#fallbacks.drain(),
      durationMs: this.#durationMs.drain(),
    };
    this.#outcomes = [];
    this.#prefix = [];
    this.#prefixSeen.clear();
    this.#prefixHashes = 0;
    return news;
  }

  protected send(batches: Sealed<PoolNews>[], exchange: number): Promise<PoolView> {
    return this.rpc().sync({
      isolate: this.isolate(),
      seq: exchange,
      spec: this.view?.version === this.#spec.version ? null : this.#spec,
      inflight: Object.fromEntries(this.#local),
      batches,
      prefixCursor: this.#prefixCursor,
    });
  }

  protected override adopt(view: PoolView): void {
    this.view = view;
    this.#others = new Map(view.replicas.map((r) => [r.id, r.others]));
    this.#metrics = new Map(view.replicas.flatMap((r) => (r.metrics ? [[r.id, r.metrics] as const] : [])));
    for (const [id, m] of this.#metrics) if (engineIndexBlocks(m) !== null) this.#engineCache.set(id, { numGpuBlocks: m.numGpuBlocks, blockSize: m.blockSize });
    this.#sizeIndex(); // before the other isolates' inserts, so they land in an index of the engines' size
    for (const [id, m] of this.#metrics) this.#slots.observe(id, m);
    this.#prefixCursor = view.prefix.cursor;
    if (view.prefix.inserts.length > 0) {
      this.#index.apply(view.prefix.inserts);
      this.#prefixSink?.(view.prefix.inserts);
    }
    // The object's circuits, plus what this isolate saw that the answer cannot include yet.
    this.#circuits = new Map(view.replicas.map((r) => [r.id, r.circuit]));
    this.#fold([...this.unacked.flatMap((b) => b.outcomes), ...this.#outcomes]);
    // Other isolates' releases are in this view. (The waiter offered a turn asks for the next view if refused:
    // each request's I/O must run in its own context, so the room never lends one waiter's to another.)
    this.waiting.offer();
  }
}

function logFailure(what: string, pool: string, error: unknown): void {
  console.error(JSON.stringify({ event: "shared_state_unavailable", what, pool, message: (error as Error)?.message ?? String(error) }));
}
