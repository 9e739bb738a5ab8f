/**
 * A RouteWise route's guards and accounts, as observers of one attempt
 * (src/app/engine/plan.ts): its concurrency slot, the quota units it holds while in
 * flight, its verdict for the route's circuit, and what it cost (spend, tokens, a latency
 * sample when it served). The engine tells `ended` exactly once, however the attempt
 * ended, so each is settled once: a client that leaves before headers, a hedge's loser,
 * a timeout or a broken body included.
 */
import type { ProviderRoute } from "../../core/config/routewise-schema";
import { actualCost } from "../../core/routewise/cost";
import type { RequestShape } from "../../core/routewise/types";
import { verdictOf } from "../../core/upstream/verdict";
import { clock } from "../../lib/clock";
import type { AttemptEnd, AttemptInfo, AttemptObserver } from "../engine/plan";
import type { Keeper } from "../state/sync-loop";
import type { SlotAgent } from "../state/routewise/slot-agent";
import type { RouteWiseAgents } from "../state/routewise/views";

type Tokens = { promptTokens: number; outputTokens: number; cachedTokens: number };

export interface RouteAccountInput {
  route: ProviderRoute;
  agents: RouteWiseAgents;
  shape: RequestShape;
  /** Predicted output tokens on this route (the decision's): what a quota attempt holds while in flight. */
  predictedOutput: number;
  /** The slot taken for the attempt, if the route has concurrency slots. */
  slot: SlotAgent | undefined;
  keeper: Keeper;
  /**
   * Latency samples for the envelope (default true). A calibration probe's sample goes to
   * the envelope through the calibration call instead, so it is not counted twice.
   */
  sample?: boolean;
}

export function routeAccount(input: RouteAccountInput): AttemptObserver {
  const { route, agents, shape, slot, keeper } = input;
  const quota = agents.quotas.get(route.id);
  let reserved = 0;
  let slotHeld = slot !== undefined;

  const releaseSlot = () => {
    if (!slotHeld) return;
    slotHeld = false;
    slot!.release(keeper);
  };
  /** The attempt's real use of its quota (null: none), in place of what it held. */
  const useQuota = (tokens: Tokens | null) => {
    if (quota) {
      const used = tokens === null ? 0 : quota.spec.unit === "requests" ? 1 : tokens.promptTokens + tokens.outputTokens;
      quota.settle(reserved, used);
      reserved = 0;
      quota.nudge(keeper);
    }
    agents.model.nudge(keeper);
  };
  const charge = (status: number | null, tokens: Tokens) => {
    agents.model.count(route.id, status, actualCost(route.pricing, route.provider_type, tokens), tokens);
    useQuota(tokens);
  };

  return {
    started() {
      if (!quota) return;
      // Held now, so requests deciding while this one runs see the quota it will use.
      reserved = quota.spec.unit === "requests" ? 1 : shape.promptTokens + input.predictedOutput;
      quota.reserve(reserved);
    },
    ended(a: AttemptInfo, end: AttemptEnd) {
      releaseSlot();
      const verdict = verdictOf(end.attempt, end.body, true);
      if (verdict !== "neutral") agents.model.outcome(route.id, verdict === "success", clock.now());
      const o = end.attempt.outcome;
      if (o.kind !== "answered") {
        // A hedge's loser cut before its headers was still sent: its prompt is billed. Otherwise nothing was used.
        if (o.kind === "cancelled") charge(null, { promptTokens: shape.promptTokens, outputTokens: 0, cachedTokens: 0 });
        else useQuota(null);
        return;
      }
      const status = o.status;
      if (status >= 400) {
        // An error answer (the client's own 4xx, passed on) is not billed by providers.
        agents.model.count(route.id, end.won ? status : null, 0, { promptTokens: 0, outputTokens: 0, cachedTokens: 0 });
        useQuota(null);
        return;
      }
      const usage = end.usage;
      if (usage?.discarded) agents.model.usageDiscarded(route.id);
      const tokens = { promptTokens: usage?.promptTokens ?? shape.promptTokens, outputTokens: usage?.outputTokens ?? 0, cachedTokens: usage?.cachedTokens ?? 0 };
      if (end.won && end.body === "complete") {
        const spend = actualCost(route.pricing, route.provider_type, tokens);
        // A probe is billed like any request, but it is not a client's answer: spend and tokens only.
        if (input.sample === false) agents.model.count(route.id, null, spend, tokens);
        else {
          // The envelope predicts one choice's output (decide.ts multiplies by n): an answer of n choices is sampled as one.
          const sampled = { ...tokens, outputTokens: Math.round(tokens.outputTokens / (shape.choices ?? 1)) };
          agents.model.served({ route: route.id, at: clock.now(), ttftMs: end.firstByteMs ?? end.attempt.ms, totalMs: Date.now() - a.startedAt, ...sampled }, spend, status, tokens);
        }
        useQuota(tokens);
        return;
      }
      charge(end.won ? status : null, tokens);
    },
  };
}
