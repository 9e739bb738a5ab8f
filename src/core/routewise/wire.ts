/** What isolates and the RouteWise objects (src/platform/objects/route-*.ts) say to each other. */
import type { QuotaSource } from "../config/routewise-schema";
import type { Demand, Envelope, LatencySample } from "./types";
import type { CounterSample } from "../../lib/counters";
import type { CircuitState } from "../health/circuit";
import type { Acked, BatchedSync } from "../state/batches";

/** The envelope object's settings, from the model's router_params (sent with every sync, so a config change applies at once). */
export interface EnvelopeSettings {
  percentiles: number[];
  windowMs: number;
  latencyWindowMs: number;
  routes: string[];
}

export interface RouteSample extends LatencySample {
  route: string;
}

/** One try's verdict on a route, for the route's shared circuit. */
export interface RouteVerdict {
  route: string;
  ok: boolean;
  /** Domain time of the verdict, epoch ms. */
  at: number;
}

/** What one isolate served of a model since its last batch to the model's envelope object. */
export interface EnvelopeNews {
  samples: RouteSample[];
  /** Requests this isolate routed (the model's demand). */
  requests: number;
  /** Counter increments: family → samples. */
  counters: Record<string, CounterSample[]>;
  /** Tries' verdicts, oldest first, folded into the routes' circuits. */
  verdicts: RouteVerdict[];
}

/** An isolate's exchange with a model's envelope object; the settings ride along so a config change applies at once. */
export interface EnvelopeSync extends BatchedSync<EnvelopeNews> {
  settings: EnvelopeSettings;
}

/** The model's shared state: every route's envelope and circuit, and the model's demand. */
export interface EnvelopeState {
  envelopes: Record<string, Envelope | null>;
  demand: Demand;
  /** Each route's circuit (routes without a verdict yet are closed and absent). */
  circuits: Record<string, CircuitState>;
}

export type EnvelopeView = EnvelopeState & Acked;

export interface EnvelopeSnapshot extends EnvelopeState {
  counters: Record<string, CounterSample[]>;
}

/** A quota pool as the config describes it; `id` names its object. */
export interface QuotaSpec {
  id: string;
  /** The config version the terms come from (ids sort by publish time): the object keeps the newest. */
  version: string;
  limit: number;
  unit: "tokens" | "requests";
  source: QuotaSource;
  /** The usage API's URL as written, `${VAR}` unresolved, when it holds an env value: what the object stores in its place. */
  urlAtRest?: string;
}

/** What one isolate used of a quota since its last batch. */
export interface QuotaNews {
  /** Units used (every route of the pool together). */
  used: number;
  /** This isolate found too few units left for a request: the quota is used up in practice. */
  short?: boolean;
}

export interface QuotaSync extends BatchedSync<QuotaNews> {
  spec: QuotaSpec;
}

/** The quota as its object knows it. */
export interface QuotaState {
  remaining: number;
  limit: number;
  unit: "tokens" | "requests";
  /** Epoch ms the window resets (null: unknown or rolling). */
  resetAt: number | null;
  failSafe: "never_polled" | "source_unreachable" | null;
  /** Epoch ms of the last successful poll (null: never). */
  polledAt: number | null;
  /** Why the last poll failed (null when it worked); never holds a credential. */
  lastError: string | null;
  /** Times the quota went from usable to exhausted, by reason. */
  exhaustions: { used_up: number; fail_safe: number };
}

/** The quota object's answer to a sync. */
export type QuotaAnswer = QuotaState & Acked;

export interface SlotRequest {
  isolate: string;
  limit: number;
  /** Slots this isolate wants to hold in total (acquire: at least one more than now). */
  hold: number;
  /** A grant not renewed within this long is freed: a vanished isolate's slots come back. */
  ttlMs: number;
}

/**
 * Slots need no batches: `hold` is absolute, so a request sent twice asks for the same
 * grant, idempotent by nature. They still ride the protocol, with no batch ever sealed.
 */
export type SlotNews = Record<never, never>;

export type SlotSync = SlotRequest & BatchedSync<SlotNews>;

export interface SlotGrant extends Acked {
  /** Slots this isolate holds now. */
  granted: number;
  /** Slots no isolate holds. */
  unclaimed: number;
}
