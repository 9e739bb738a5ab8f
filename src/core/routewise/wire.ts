/** What isolates and the RouteWise objects (src/platform/objects/route-*.ts) say to each other. */
import type { QuotaSource } from "../config/routewise-schema";
import type { Demand, Envelope, LatencySample } from "./types";
import type { CounterSample } from "../../lib/counters";

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

/** One isolate's batch to a model's envelope object. */
export interface EnvelopeSync {
  isolate: string;
  settings: EnvelopeSettings;
  samples: RouteSample[];
  /** Requests this isolate routed since its last sync (the model's demand). */
  requests: number;
  /** Counter increments since the last sync: family → samples. */
  counters: Record<string, CounterSample[]>;
}

export interface EnvelopeView {
  envelopes: Record<string, Envelope | null>;
  demand: Demand;
}

export interface EnvelopeSnapshot extends EnvelopeView {
  counters: Record<string, CounterSample[]>;
}

/** A quota pool as the config describes it; `id` names its object. */
export interface QuotaSpec {
  id: string;
  limit: number;
  unit: "tokens" | "requests";
  source: QuotaSource;
}

export interface QuotaSync {
  spec: QuotaSpec;
  /** Units this isolate used since its last sync (every route of the pool together). */
  used: number;
  /** This isolate found too few units left for a request: the quota is used up in practice. */
  short?: boolean;
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

export interface SlotRequest {
  isolate: string;
  limit: number;
  /** Slots this isolate wants to hold in total (acquire: at least one more than now). */
  hold: number;
  /** A grant not renewed within this long is freed: a vanished isolate's slots come back. */
  ttlMs: number;
}

export interface SlotGrant {
  /** Slots this isolate holds now. */
  granted: number;
  /** Slots no isolate holds. */
  unclaimed: number;
}
